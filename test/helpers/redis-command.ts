import { once } from "node:events";
import { connect } from "node:net";

/**
 * Sends one command to the Redis at `url` (redis://host:port) over its wire protocol and resolves with its reply:
 * what a test reads or clears in the Redis a program under test shares, without a client library of its own.
 * Handles the replies KEYS and DEL give: an array of bulk strings (without line breaks in them), an integer.
 */
export async function redisCommand(url: string, ...args: string[]): Promise<string[] | number> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port || 6379), hostname);
  await once(socket, "connect");
  const encoded = `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("")}`;
  socket.write(encoded);
  let reply = "";
  try {
    for (;;) {
      const [chunk] = (await once(socket, "data")) as [Buffer];
      reply += chunk.toString();
      const parsed = parseReply(reply);
      if (parsed !== undefined) return parsed;
    }
  } finally {
    socket.destroy();
  }
}

/** The reply once all of it arrived, else undefined. */
function parseReply(reply: string): string[] | number | undefined {
  const lines = reply.split("\r\n");
  const head = lines[0]!;
  if (head.startsWith("-")) throw new Error(`Redis answered ${head.slice(1)}`);
  if (head.startsWith(":")) return Number(head.slice(1));
  if (!head.startsWith("*") || !reply.includes("\r\n")) return undefined;
  const count = Number(head.slice(1));
  const items: string[] = [];
  for (let line = 1; items.length < count; line += 2) {
    if (line + 1 >= lines.length - 1) return undefined;
    items.push(lines[line + 1]!);
  }
  return items;
}

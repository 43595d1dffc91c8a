/**
 * A contributor's own entropy, never echoed: typed at the terminal (raw mode, Enter ends it), or piped in
 * (`head -c 64 /dev/urandom | base64 | npm run ceremony -- contribute ... --entropy`). It only adds to the 64 bytes
 * the OS gives each contribution.
 */
export async function readExtraEntropy(prompt: (line: string) => void): Promise<string> {
  const { stdin } = process;
  if (!stdin.isTTY) {
    let text = "";
    for await (const chunk of stdin) text += String(chunk);
    return text.trim();
  }
  prompt("type random text, then Enter (it is not shown):");
  stdin.setRawMode(true);
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let text = "";
      stdin.on("data", (chunk: Buffer) => {
        for (const char of chunk.toString("utf8")) {
          if (char === "\r" || char === "\n") return resolve(text);
          if (char === "\u0003") return reject(new Error("interrupted"));
          text = char === "\u007f" ? text.slice(0, -1) : text + char;
        }
      });
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    stdin.removeAllListeners("data");
  }
}

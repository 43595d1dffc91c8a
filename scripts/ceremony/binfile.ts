import { open } from "node:fs/promises";

/** Where one section of a snarkjs binary file lies. */
interface Section {
  offset: number;
  size: number;
}

/**
 * The sections of a snarkjs binary file (`ptau`, `zkey`): a 4-byte magic, a u32 version, a u32 section count, then
 * each section as a u32 type, a u64 size and its bytes, all little-endian (@iden3/binfileutils' readBinFile).
 * Reads only the headers; `read` fetches one section's bytes.
 */
export async function readSections(file: string, magic: "ptau" | "zkey") {
  const handle = await open(file, "r");
  try {
    const { size: fileSize } = await handle.stat();
    const head = Buffer.alloc(12);
    await handle.read(head, 0, 12, 0);
    if (head.toString("latin1", 0, 4) !== magic) throw new Error(`${file} is not a snarkjs ${magic} file`);
    const count = head.readUInt32LE(8);
    const sections = new Map<number, Section[]>();
    let position = 12;
    const header = Buffer.alloc(12);
    for (let i = 0; i < count; i++) {
      await handle.read(header, 0, 12, position);
      const type = header.readUInt32LE(0);
      const size = Number(header.readBigUInt64LE(4));
      position += 12;
      if (position + size > fileSize) throw new Error(`${file} is truncated (section ${type})`);
      sections.set(type, [...(sections.get(type) ?? []), { offset: position, size }]);
      position += size;
    }
    return {
      has: (type: number) => sections.has(type),
      /** The bytes of the one section of `type`. */
      async read(type: number): Promise<Buffer> {
        const found = sections.get(type);
        if (found?.length !== 1) throw new Error(`${file}: expected one section ${type}, found ${found?.length ?? 0}`);
        const [{ offset, size }] = found as [Section];
        const bytes = Buffer.alloc(size);
        const reader = await open(file, "r");
        try {
          await reader.read(bytes, 0, size, offset);
        } finally {
          await reader.close();
        }
        return bytes;
      },
    };
  } finally {
    await handle.close();
  }
}

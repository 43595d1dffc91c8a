/**
 * Sections of an iden3 binary file (.zkey, .wtns): a 4-byte magic, a version, then `id, u64 size, bytes` records.
 * Each section is a view into `bytes`, not a copy.
 */
export function readSections(bytes: Uint8Array, magic: string): Map<number, Uint8Array> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = new TextDecoder().decode(bytes.subarray(0, 4));
  if (found !== magic) throw new Error(`not a .${magic} file`);
  const sections = new Map<number, Uint8Array>();
  const count = view.getUint32(8, true);
  let offset = 12;
  for (let i = 0; i < count; i++) {
    const id = view.getUint32(offset, true);
    const size = Number(view.getBigUint64(offset + 4, true));
    offset += 12;
    sections.set(id, bytes.subarray(offset, offset + size));
    offset += size;
  }
  return sections;
}

/** The section `id` of a file read by readSections; a missing one means a truncated or foreign file. */
export function section(sections: Map<number, Uint8Array>, id: number): Uint8Array {
  const found = sections.get(id);
  if (!found) throw new Error(`section ${id} is missing`);
  return found;
}

/**
 * The packed encoding of tree leaves the facilitator's trees route serves (docs/api.md 4.10): each leaf as 64 hex
 * characters (32 big-endian bytes), one after the other in one string. About 20% smaller than decimal strings,
 * and a slice of it is a slice of the leaves, so a server keeps it ready and cuts it where a client asks.
 */
export const PACKED_LEAF_CHARS = 64;

export function packLeaves(leaves: readonly bigint[]): string {
  return leaves.map((leaf) => leaf.toString(16).padStart(PACKED_LEAF_CHARS, "0")).join("");
}

/** The leaves of a packed string; a RangeError when it is not whole leaves of hex. */
export function unpackLeaves(packed: string): bigint[] {
  if (packed.length % PACKED_LEAF_CHARS !== 0 || !/^[0-9a-f]*$/.test(packed)) throw new RangeError("packed leaves must be 64 lower-case hex characters each");
  return Array.from({ length: packed.length / PACKED_LEAF_CHARS }, (_, i) => BigInt(`0x${packed.slice(i * PACKED_LEAF_CHARS, (i + 1) * PACKED_LEAF_CHARS)}`));
}

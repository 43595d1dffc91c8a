import { hexlify, keccak256 } from "ethers";
import type { ByteRange, CompiledContract } from "./compiled-contract.js";

/** Where a library's runtime code holds its own address: after the leading PUSH20 (0x73). */
export const LIBRARY_SELF_ADDRESS: ByteRange = { start: 1, length: 20 };

/** Every span of `contract`'s runtime code that its deployment fills in. */
export function deploymentFilledRanges(contract: CompiledContract): ByteRange[] {
  return [
    ...contract.immutables.flatMap((immutable) => immutable.ranges),
    ...contract.links.flatMap((link) => link.ranges),
    ...(contract.isLibrary ? [LIBRARY_SELF_ADDRESS] : []),
  ];
}

/** `code` with `ranges` zeroed. */
export function masked(code: Uint8Array, ranges: ByteRange[]): Uint8Array {
  const copy = Uint8Array.from(code);
  for (const { start, length } of ranges) copy.fill(0, start, start + length);
  return copy;
}

/** How `code` reads in the table: its length and the keccak256 of its masked bytes. */
export function describeCode(code: Uint8Array, ranges: ByteRange[]): string {
  return `${code.length} bytes, keccak256 of the masked code ${keccak256(masked(code, ranges)).slice(0, 18)}...`;
}

/**
 * Whether the code on chain is `contract` as compiled here, once what deployment fills in (immutables, library
 * addresses, a library's own address) is masked in both: undefined if it is, else what differs.
 */
export function runtimeDifference(contract: CompiledContract, onChain: Uint8Array): string | undefined {
  if (onChain.length === 0) return "no code at the address";
  if (onChain.length !== contract.code.length) return `${onChain.length} bytes, compiled ${contract.code.length}`;
  const ranges = deploymentFilledRanges(contract);
  const [ours, theirs] = [masked(contract.code, ranges), masked(onChain, ranges)];
  const first = ours.findIndex((byte, i) => byte !== theirs[i]);
  return first === -1 ? undefined : `${describeCode(onChain, ranges)}; differs from byte ${first}`;
}

/** The value the deployment wrote at `ranges` of `code` (hex), or undefined where the spans disagree. */
export function filledValue(code: Uint8Array, ranges: ByteRange[]): string | undefined {
  const values = new Set(ranges.map(({ start, length }) => hexlify(code.subarray(start, start + length))));
  return values.size === 1 ? [...values][0] : undefined;
}

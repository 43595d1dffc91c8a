import { AbiCoder, keccak256 } from "ethers";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";

/** The relay instructions a proof commits to (Entrypoint's RelayData). */
export interface RelayData {
  recipient: string;
  feeRecipient: string;
  /** Share of the withdrawn amount paid to feeRecipient, in basis points. */
  relayFeeBPS: bigint;
}

/** Entrypoint's Withdrawal struct: who processes the withdrawal and the ABI-encoded RelayData. */
export interface Withdrawal {
  processooor: string;
  data: string;
}

const abi = AbiCoder.defaultAbiCoder();

export function encodeRelayData({ recipient, feeRecipient, relayFeeBPS }: RelayData): string {
  return abi.encode(["tuple(address,address,uint256)"], [[recipient, feeRecipient, relayFeeBPS]]);
}

/**
 * context = keccak256(abi.encode(withdrawal, scope)) % FIELD. A proof is bound to it, so the recipient or fee
 * cannot be changed after proving.
 */
export function withdrawalContext({ processooor, data }: Withdrawal, scope: bigint): bigint {
  const encoded = abi.encode(["tuple(address,bytes)", "uint256"], [[processooor, data], scope]);
  return BigInt(keccak256(encoded)) % SNARK_SCALAR_FIELD;
}

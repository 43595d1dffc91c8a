import { AbiCoder, type Signer } from "ethers";
import { ENTRYPOINT_ABI } from "../contracts/abis.js";
import { connectContract } from "../contracts/typed-contract.js";
import { decodeXPayment, poolTransferOf } from "../x402/index.js";
import type { PoolAddressBook } from "./pool-events.js";

export interface ReturnUnusedPaymentOptions {
  /** Any account with gas, connected to a provider: its address is linked to the payment (the note that paid it). */
  signer: Signer;
  addressBook: Pick<PoolAddressBook, "entrypoint" | "privacyPool" | "usdc">;
  /** The settle-x402 answer's xPayment: the pool's authorization of the seller's price. */
  xPayment: string;
}

/**
 * Turns a settle-x402 payment the seller never took back into the agent's refund note, without the facilitator:
 * Entrypoint.refundAuthorization, which anyone may call once the authorization's validBefore has passed and the token
 * says it was never used. The pool checks the transfer and refund anchor the payment carries against its record of
 * the relay, inserts Poseidon(price, refundAnchor) once, and moves nothing (the price never left the pool); the note
 * opens with the spent note's refund secrets, which recoverNotes finds from the seed. The pool refuses (and nothing is
 * sent) before validBefore (PaymentNotExpired), after the seller took it (PaymentAlreadyUsed) and once returned.
 */
export async function returnUnusedPayment({ signer, addressBook, xPayment }: ReturnUnusedPaymentOptions): Promise<{ txHash: string }> {
  const { payload } = decodeXPayment(xPayment);
  const transfer = poolTransferOf(addressBook.privacyPool, payload);
  if (transfer === undefined) throw new Error(`the payment is not the pool's (its from is ${payload.authorization.from}, not ${addressBook.privacyPool})`);
  const [originNullifierHash, refundAnchor] = AbiCoder.defaultAbiCoder().decode(["uint256", "uint256"], payload.signature) as unknown as [bigint, bigint];
  const { payTo, value, validAfter, validBefore } = transfer;
  const entrypoint = connectContract(ENTRYPOINT_ABI, addressBook.entrypoint, signer);
  const sent = await entrypoint.refundAuthorization(addressBook.usdc, originNullifierHash, { payTo, value, validAfter, validBefore }, refundAnchor);
  const receipt = await sent.wait();
  if (receipt === null || receipt.status !== 1) throw new Error("the refund transaction was not mined successfully");
  return { txHash: receipt.hash };
}

import type { LeanIMT } from "@zk-kit/lean-imt";
import {
  buildWithdrawInput,
  changeNoteOf,
  deriveChangeSecrets,
  deriveRefundSecrets,
  encodeAccessFeeData,
  encodePoolAuthorization,
  encodeRelayData,
  encodeSellerPayment,
  encodeTabOpening,
  merkleWitness,
  proveWithdrawal,
  toSolidityProof,
  packValueFeeAndDepths,
  precommitmentOf,
  unpackValueFeeAndDepths,
  WITHDRAW_PUBLIC_SIGNALS,
  withdrawalContext,
  type ValueFeeAndDepths,
  type MerkleWitness,
  type Note,
  type AccessFeeData,
  type PoolAuthorization,
  type RelayData,
  type SellerPayment,
  type TabOpening,
  type SolidityWithdrawProof,
  type Withdrawal,
  type WithdrawPublicSignalName,
} from "../../../sdk/index.js";

export interface RelayedWithdrawalRequest extends ProvenWithdrawalRequest {
  relayData: RelayData;
}

/** What any proof of a withdrawal through the entrypoint needs besides its data. */
interface ProvenWithdrawalRequest {
  note: Note;
  withdrawnValue: bigint;
  /** The pool's state tree (sdk createLeanIMT), holding note.commitment. */
  stateTree: LeanIMT<bigint>;
  /** The ASP tree of approved labels, holding note.label. */
  aspTree: LeanIMT<bigint>;
  entrypoint: string;
  scope: bigint;
  /** A path to prove instead of the trees' own (e.g. one at another depth), and the size of its tree. */
  stateWitness?: MerkleWitness;
  stateTreeSize?: bigint;
  aspWitness?: MerkleWitness;
}

export interface RelayedWithdrawal {
  withdrawal: Withdrawal;
  proof: SolidityWithdrawProof;
  /** The size of the state tree whose root the proof uses: Entrypoint.relay's stateTreeSize. */
  stateTreeSize: bigint;
  changeNote: Note;
}

/** Proves a withdrawal for Entrypoint.relay with a real Groth16 proof; the change note uses derived secrets. */
export function proveRelayedWithdrawal(request: RelayedWithdrawalRequest): Promise<RelayedWithdrawal> {
  return proveWithdrawalOf(request, encodeRelayData(request.relayData), request.relayData.relayFeeBPS);
}

/** Proves an access fee for Entrypoint.relayAccessFee (no relay fee) with a real Groth16 proof, as proveRelayedWithdrawal does. */
export function proveAccessFee(request: ProvenWithdrawalRequest & { accessFee: AccessFeeData }): Promise<RelayedWithdrawal> {
  return proveWithdrawalOf(request, encodeAccessFeeData(request.accessFee), 0n);
}

/**
 * Proves a seller's payment straight from the pool (a SellerPayment relayed by Entrypoint.relay): it withdraws the
 * price plus the fee unless `withdrawnValue` says otherwise, with the proof's relay fee `relayFeeBPS` (0 unless a test
 * wants another).
 */
export function proveSellerPayment(
  request: Omit<ProvenWithdrawalRequest, "withdrawnValue"> & { sellerPayment: SellerPayment; withdrawnValue?: bigint; relayFeeBPS?: bigint },
): Promise<RelayedWithdrawal> {
  const { sellerPayment } = request;
  const withdrawnValue = request.withdrawnValue ?? sellerPayment.amount + sellerPayment.fee;
  return proveWithdrawalOf({ ...request, withdrawnValue }, encodeSellerPayment(sellerPayment), request.relayFeeBPS ?? 0n);
}

/**
 * Proves an `exact` seller paid by the pool (a PoolAuthorization relayed by Entrypoint.relay): it withdraws what pays
 * the authorization's value at its relay fee unless `withdrawnValue` says otherwise, with the proof's relay fee
 * `relayFeeBPS` (the authorization's unless a test wants another).
 */
export function provePoolAuthorization(
  request: Omit<ProvenWithdrawalRequest, "withdrawnValue"> & { authorization: PoolAuthorization; withdrawnValue: bigint; relayFeeBPS?: bigint },
): Promise<RelayedWithdrawal> {
  const { authorization } = request;
  return proveWithdrawalOf(request, encodePoolAuthorization(authorization), request.relayFeeBPS ?? authorization.relayFeeBPS);
}

/**
 * Proves a private tab's opening (a TabOpening relayed by Entrypoint.relay): the relay deposits `withdrawnValue` less
 * the opening's relay fee into its channel, with the proof's relay fee `relayFeeBPS` (the opening's unless a test wants another).
 */
export function proveTabOpening(request: ProvenWithdrawalRequest & { opening: TabOpening; relayFeeBPS?: bigint }): Promise<RelayedWithdrawal> {
  const { opening } = request;
  return proveWithdrawalOf(request, encodeTabOpening(opening), request.relayFeeBPS ?? opening.relayFeeBPS);
}

async function proveWithdrawalOf(request: ProvenWithdrawalRequest, data: string, relayFeeBPS: bigint): Promise<RelayedWithdrawal> {
  const { note, withdrawnValue, stateTree, aspTree, scope } = request;
  const withdrawal = { processooor: request.entrypoint, data };
  const changeSecrets = deriveChangeSecrets(note);
  const input = buildWithdrawInput({
    note,
    withdrawnValue,
    changeSecrets,
    stateWitness: request.stateWitness ?? merkleWitness(stateTree, stateTree.indexOf(note.commitment)),
    aspWitness: request.aspWitness ?? merkleWitness(aspTree, aspTree.indexOf(note.label)),
    context: withdrawalContext(withdrawal, scope),
    relayFeeBPS,
    refundPrecommitment: precommitmentOf(deriveRefundSecrets(note)),
  });
  return {
    withdrawal,
    proof: toSolidityProof(await proveWithdrawal(input)),
    stateTreeSize: request.stateTreeSize ?? BigInt(stateTree.size),
    changeNote: changeNoteOf(note, withdrawnValue, changeSecrets),
  };
}

/** A copy of `proof` with one public signal replaced, as a dishonest relayer would submit it. */
export function withSignal(
  proof: SolidityWithdrawProof,
  name: WithdrawPublicSignalName,
  value: bigint,
): SolidityWithdrawProof {
  const pubSignals = [...proof.pubSignals];
  pubSignals[WITHDRAW_PUBLIC_SIGNALS.indexOf(name)] = value;
  return { ...proof, pubSignals };
}

/** A copy of `proof` with parts of its packed valueFeeAndDepths replaced. */
export function withPackedParts(proof: SolidityWithdrawProof, parts: Partial<ValueFeeAndDepths>): SolidityWithdrawProof {
  const packed = proof.pubSignals[WITHDRAW_PUBLIC_SIGNALS.indexOf("valueFeeAndDepths")]!;
  return withSignal(proof, "valueFeeAndDepths", packValueFeeAndDepths({ ...unpackValueFeeAndDepths(packed), ...parts }));
}

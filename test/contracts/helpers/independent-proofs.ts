import { buildWithdrawInput, hash1, proveWithdrawal, toSolidityProof, type SolidityWithdrawProof } from "../../../sdk/index.js";
import { buildWithdrawScenario } from "../../helpers/withdraw-scenario.js";

/**
 * `count` valid withdrawal proofs of distinct notes, made off chain against trees of their own: enough for a
 * verifier, which checks proofs and not the pool's roots. Each context is a full-size field element, as a real
 * one (a keccak reduced mod the field) is, so calldata costs what a real withdrawal's does.
 */
export async function proveIndependentWithdrawals(count: number): Promise<SolidityWithdrawProof[]> {
  const proofs: SolidityWithdrawProof[] = [];
  // One at a time: snarkjs already proves on every core.
  for (let n = 0; n < count; n++) {
    const i = BigInt(n);
    const { request } = buildWithdrawScenario({
      secrets: { nullifier: 1_000n + i, secret: 2_000n + i },
      withdrawnValue: 1_000_000n + i,
      context: hash1(3_000n + i),
    });
    proofs.push(toSolidityProof(await proveWithdrawal(buildWithdrawInput(request))));
  }
  return proofs;
}

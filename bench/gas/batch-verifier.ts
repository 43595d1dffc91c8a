// npm run bench:batch-verifier
//
// Gas of WithdrawalBatchVerifier.verifyProofs for batches of 1 to 16 real withdrawal proofs on the embedded chain,
// per proof and against the single verifier (WithdrawalVerifier.verifyProof, which the pool inlines), as eth_estimateGas reports it: with
// the 21k base and the calldata of a transaction that calls the verifier directly. Within relayBatch the base is
// paid once per batch and the calldata is the relay's own, so "per proof, no base" is the verifier's share there.
// Writes bench/results/batch-verifier.json.
import { network } from "hardhat";
import { releaseProverThreads } from "../../sdk/index.js";
import { proveIndependentWithdrawals } from "../../test/contracts/helpers/independent-proofs.js";
import { printTable, writeResults } from "../report.js";

const BATCH_SIZES = [1, 2, 4, 8, 16];
/** Distinct proofs made; larger batches repeat them (gas does not depend on which valid proofs they are). */
const DISTINCT_PROOFS = 4;
const TX_BASE = 21_000;

const { ethers } = await network.create();
console.log(`proving ${DISTINCT_PROOFS} withdrawals...`);
const proofs = await proveIndependentWithdrawals(DISTINCT_PROOFS);
await releaseProverThreads();

const batchVerifier = await ethers.deployContract("WithdrawalBatchVerifier");
const singleVerifier = await ethers.deployContract("WithdrawalVerifierHarness");
const [first] = proofs;
const single = Number(await singleVerifier.verifyProof.estimateGas(first!.pA, first!.pB, first!.pC, first!.pubSignals));

const measurements = [];
for (const k of BATCH_SIZES) {
  const batch = Array.from({ length: k }, (_, i) => proofs[i % proofs.length]!);
  if (!(await batchVerifier.verifyProofs(batch))) throw new Error(`a valid batch of ${k} was refused`);
  const total = Number(await batchVerifier.verifyProofs.estimateGas(batch));
  measurements.push({ k, total, perProof: Math.round(total / k), perProofNoBase: Math.round((total - TX_BASE) / k) });
}

const fmt = (n: number) => n.toLocaleString("en-US").padStart(9);
const share = (n: number) => `${((n / single) * 100).toFixed(0)}%`.padStart(5);
printTable(
  ["verifyProofs", "    total  per proof  of single  per proof, no base"],
  measurements.map(({ k, total, perProof, perProofNoBase }) => [
    `k = ${k}`,
    `${fmt(total)}  ${fmt(perProof)}      ${share(perProof)}           ${fmt(perProofNoBase)}`,
  ]),
);
console.log(`\nsingle verifier, one proof: ${fmt(single).trim()} gas (${fmt(single - TX_BASE).trim()} without the base)`);

await writeResults("batch-verifier", { singleVerifier: single, batches: measurements });

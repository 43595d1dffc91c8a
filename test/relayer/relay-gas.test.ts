import { expect } from "chai";
import { network } from "hardhat";
import { fillStateTree } from "../../bench/simulated-state-tree.js";
import { relayGasAt } from "../../relayer/pricing/pricing.js";
import { createLeanIMT, createNote, labelOf, precommitmentOf } from "../../sdk/index.js";
import { deployedFacilitator } from "../contracts/helpers/fixtures.js";
import { fundDepositor, secretsFor } from "../contracts/helpers/notes.js";
import { proveRelayedWithdrawal } from "../contracts/helpers/withdrawals.js";

const DEPOSIT = 5_000_000n;

/**
 * A real relay (real contracts, real proof, 500 bps take to a treasury holding no USDC yet, payment to a fresh
 * recipient: the dearest transfers) from a pool whose state tree holds `sizeBeforeRelay` leaves, the last one a real deposit: its gas and
 * the tree depth the facilitator sees before it. The other leaves are written as bench/gas does.
 */
async function relayGas(sizeBeforeRelay: number): Promise<{ depth: bigint; gasUsed: bigint }> {
  const connection = await network.create();
  try {
    const facilitator = await deployedFacilitator(connection);
    const { entrypoint, privacyPool, usdc, scope, accounts } = facilitator;
    const stateTree = await fillStateTree(
      connection,
      privacyPool,
      Array.from({ length: sizeBeforeRelay - 1 }, (_, i) => BigInt(i + 1)),
    );
    for (const holder of [privacyPool, accounts.depositor]) await usdc.mint(holder, 1n);
    await fundDepositor(facilitator, accounts.depositor, DEPOSIT);
    const secrets = secretsFor(BigInt(sizeBeforeRelay));
    await (await entrypoint.connect(accounts.depositor).deposit(usdc, DEPOSIT, precommitmentOf(secrets))).wait();
    const note = createNote(DEPOSIT, labelOf(scope, BigInt(sizeBeforeRelay)), secrets);
    stateTree.insert(note.commitment);
    expect(await privacyPool.currentRoot(), "the deposit landed where the test's tree says").to.equal(stateTree.root);
    const aspTree = createLeanIMT([note.label]);
    await (await entrypoint.updateRoot(aspTree.root, aspTree.depth, "relay-gas")).wait();
    const { withdrawal, proof, stateTreeSize } = await proveRelayedWithdrawal({
      note,
      withdrawnValue: 1_000_000n,
      stateTree,
      aspTree,
      relayData: { recipient: accounts.recipient.address, feeRecipient: accounts.feeRecipient.address, relayFeeBPS: 500n },
      entrypoint: await entrypoint.getAddress(),
      scope,
    });
    const depth = await privacyPool.currentTreeDepth();
    const receipt = await (await entrypoint.connect(accounts.stranger).relay(withdrawal, proof, scope, stateTreeSize)).wait();
    return { depth, gasUsed: receipt!.gasUsed };
  } finally {
    await connection.close();
  }
}

describe("relayer: the relay gas table of the fee floor against real relays", function () {
  // The change note takes leaf index sizeBeforeRelay. All ones (2^d - 1) hashes every level: the most a relay at
  // depth d can use. A power of two deepens the tree: one hash, the other levels store; at depth 1 that is the
  // only kind of insert there is.
  const cases = [
    { size: 2, depth: 1n, worst: true },
    { size: 3, depth: 2n, worst: true },
    { size: 16, depth: 4n, worst: false },
    { size: 31, depth: 5n, worst: true },
    { size: 1023, depth: 10n, worst: true },
  ];
  for (const { size, depth, worst } of cases) {
    it(`bounds a relay at depth ${depth} with ${size} leaves${worst ? ", its depth's worst case, within 7% of the table" : ""}`, async function () {
      const measured = await relayGas(size);
      expect(measured.depth).to.equal(depth);
      const table = relayGasAt(measured.depth);
      expect(measured.gasUsed, `gasUsed at depth ${depth}`).to.be.at.most(table);
      if (worst) expect(measured.gasUsed * 100n, `the table is padded at depth ${depth}`).to.be.at.least(table * 93n);
    });
  }
});

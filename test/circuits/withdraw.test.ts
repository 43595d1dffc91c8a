import { expect } from "chai";
import type { VerificationKey } from "snarkjs";
import {
  buildWithdrawInput,
  commitmentOf,
  createNote,
  loadVerificationKey,
  NOTE_VALUE_LIMIT,
  namePublicSignals,
  nullifierHashOf,
  precommitmentOf,
  proveWithdrawal,
  refundAnchorOf,
  refundCommitmentOf,
  SNARK_SCALAR_FIELD,
  verifyWithdrawal,
  WITHDRAW_PUBLIC_SIGNALS,
  type ValueFeeAndDepths,
  type WithdrawCircuitInput,
  type WithdrawProof,
} from "../../sdk/index.js";
import { calculateWitness } from "../helpers/circuit.js";
import { buildWithdrawScenario, type ScenarioOptions } from "../helpers/withdraw-scenario.js";

const inputFor = (overrides: Partial<ScenarioOptions> = {}) => buildWithdrawInput(buildWithdrawScenario(overrides).request);

/**
 * `input` with some of the parts of valueFeeAndDepths changed, the packed public input following them, so that the
 * constraint under test is the one that fails and not the packing.
 */
function withParts(input: WithdrawCircuitInput, parts: Partial<ValueFeeAndDepths>): WithdrawCircuitInput {
  const part = (name: keyof ValueFeeAndDepths) => parts[name] ?? BigInt(input[name] as string);
  const [withdrawnValue, stateTreeDepth, aspTreeDepth, relayFeeBPS] = [part("withdrawnValue"), part("stateTreeDepth"), part("aspTreeDepth"), part("relayFeeBPS")];
  const valueFeeAndDepths = withdrawnValue + (stateTreeDepth << 128n) + (aspTreeDepth << 136n) + (relayFeeBPS << 144n);
  const str = (x: bigint) => x.toString();
  return {
    ...input,
    withdrawnValue: str(withdrawnValue),
    stateTreeDepth: str(stateTreeDepth),
    aspTreeDepth: str(aspTreeDepth),
    relayFeeBPS: str(relayFeeBPS),
    valueFeeAndDepths: str(valueFeeAndDepths),
  };
}

/** The inverse of `x` in the scalar field (Fermat). */
function inverse(x: bigint): bigint {
  let [result, base, exponent] = [1n, x, SNARK_SCALAR_FIELD - 2n];
  while (exponent > 0n) {
    if (exponent & 1n) result = (result * base) % SNARK_SCALAR_FIELD;
    base = (base * base) % SNARK_SCALAR_FIELD;
    exponent >>= 1n;
  }
  return result;
}

async function expectNoWitness(input: WithdrawCircuitInput): Promise<void> {
  let failure: unknown;
  await calculateWitness(input).catch((error: unknown) => (failure = error));
  expect(failure, "the circuit accepted a witness it must reject").to.be.instanceOf(Error);
  expect(String(failure)).to.match(/Assert Failed/);
}

describe("withdraw circuit", function () {
  let verificationKey: VerificationKey;

  before(async function () {
    verificationKey = await loadVerificationKey();
  });

  describe("valid withdrawals", function () {
    it("proves and verifies a partial withdrawal whose signals describe the change note", async function () {
      const { note, request } = buildWithdrawScenario({ value: 5_000_000n, withdrawnValue: 1_250_000n });
      const proof = await proveWithdrawal(buildWithdrawInput(request));
      expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);

      const signals = namePublicSignals(proof.publicSignals);
      expect(signals.newCommitment).to.equal(commitmentOf(3_750_000n, note.label, precommitmentOf(request.changeSecrets)));
      expect(signals.nullifierHash).to.equal(nullifierHashOf(note.nullifier));
      expect(signals.withdrawnValue).to.equal(1_250_000n);
      expect(signals.stateRoot).to.equal(request.stateWitness.root);
      expect(signals.stateTreeDepth).to.equal(BigInt(request.stateWitness.depth));
      expect(signals.aspRoot).to.equal(request.aspWitness.root);
      expect(signals.aspTreeDepth).to.equal(BigInt(request.aspWitness.depth));
      expect(signals.context).to.equal(request.context);
      expect(signals.relayFeeBPS).to.equal(500n);
      // What a refund of any value is made from: the spent note's label under the refund precommitment.
      expect(signals.refundAnchor).to.equal(refundAnchorOf(note.label, request.refundPrecommitment));
    });

    it("spends a refund note, of whatever value the pool made it, into a change note of its label", async function () {
      const refundSecrets = { nullifier: 31n, secret: 32n };
      const { note, request } = buildWithdrawScenario({ form: "refund", value: 734_211n, withdrawnValue: 500_000n, secrets: refundSecrets, changeSecrets: { nullifier: 41n, secret: 42n } });
      // The leaf the pool inserts for a tab's rest: Poseidon(rest, anchor) with the anchor of the tab's relay.
      expect(note.commitment).to.equal(refundCommitmentOf(734_211n, refundAnchorOf(note.label, precommitmentOf(refundSecrets))));
      const proof = await proveWithdrawal(buildWithdrawInput(request));
      expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
      const signals = namePublicSignals(proof.publicSignals);
      expect(signals.nullifierHash).to.equal(nullifierHashOf(31n));
      expect(signals.newCommitment).to.equal(commitmentOf(234_211n, note.label, precommitmentOf({ nullifier: 41n, secret: 42n })));
    });

    it("accepts any fee rate up to the whole withdrawal; the refund anchor does not depend on it", async function () {
      for (const relayFeeBPS of [0n, 333n, 10_000n]) {
        const { note, request } = buildWithdrawScenario({ withdrawnValue: 1_250_001n, relayFeeBPS });
        const proof = await proveWithdrawal(buildWithdrawInput(request));
        expect(namePublicSignals(proof.publicSignals).relayFeeBPS).to.equal(relayFeeBPS);
        expect(namePublicSignals(proof.publicSignals).refundAnchor).to.equal(refundAnchorOf(note.label, request.refundPrecommitment));
      }
    });

    it("proves and verifies a full withdrawal, leaving a zero-value change commitment", async function () {
      const { note, request } = buildWithdrawScenario({ value: 2_000_000n, withdrawnValue: 2_000_000n });
      const proof = await proveWithdrawal(buildWithdrawInput(request));
      expect(await verifyWithdrawal(proof, verificationKey)).to.equal(true);
      expect(namePublicSignals(proof.publicSignals).newCommitment).to.equal(
        commitmentOf(0n, note.label, precommitmentOf(request.changeSecrets)),
      );
    });

    it("accepts a note that is the only leaf of the state tree (depth 0)", async function () {
      await calculateWitness(inputFor({ stateLeavesBefore: 0, stateLeavesAfter: 0, otherAspLabels: 0 }));
    });

    it("accepts a note that is promoted at a level without a right sibling", async function () {
      // 7 leaves, the note last: it has no sibling at level 0 and is promoted.
      await calculateWitness(inputFor({ stateLeavesBefore: 6, stateLeavesAfter: 0 }));
    });

    it("accepts the largest value a note may hold, 2^128 - 1", async function () {
      await calculateWitness(inputFor({ value: NOTE_VALUE_LIMIT - 1n, withdrawnValue: NOTE_VALUE_LIMIT - 1n }));
    });
  });

  describe("soundness: inputs that admit no witness", function () {
    it("rejects a wrong state root", async function () {
      const input = inputFor();
      await expectNoWitness({ ...input, stateRoot: (BigInt(input.stateRoot as string) + 1n).toString() });
    });

    it("rejects a label that is not in the ASP tree", async function () {
      await expectNoWitness(inputFor({ labelApproved: false }));
    });

    it("rejects a withdrawal larger than the note's value", async function () {
      const { request } = buildWithdrawScenario({ value: 1_000_000n, withdrawnValue: 1_000_000n });
      // Bypass the builder's own check to reach the circuit with the bad amount.
      await expectNoWitness(withParts(buildWithdrawInput(request), { withdrawnValue: 1_000_001n }));
    });

    it("rejects a withdrawal of zero", async function () {
      await expectNoWitness(withParts(inputFor(), { withdrawnValue: 0n }));
    });

    it("rejects a note whose value is 2^128 or more", async function () {
      // Build the scenario with a legal value, then swap in the oversized note and a tree that contains it, so
      // the only failing constraint is the range check.
      const value = NOTE_VALUE_LIMIT;
      const secrets = { nullifier: 11n, secret: 22n };
      const commitment = commitmentOf(value, 987654321n, precommitmentOf(secrets));
      const { request } = buildWithdrawScenario({ stateLeavesBefore: 0, stateLeavesAfter: 0 });
      const input = buildWithdrawInput(request);
      await expectNoWitness({
        ...withParts(input, { withdrawnValue: 1n }),
        existingValue: value.toString(),
        stateRoot: commitment.toString(),
      });
    });

    it("rejects a change note that reuses the spent nullifier", async function () {
      const input = inputFor();
      await expectNoWitness({ ...input, newNullifier: input.existingNullifier! });
    });

    it("rejects the same leaf proven at one level deeper (a trailing promotion)", async function () {
      const input = inputFor();
      const depth = Number(input.stateTreeDepth);
      await expectNoWitness(withParts(input, { stateTreeDepth: BigInt(depth + 1) }));
    });

    it("rejects the same leaf proven at a shallower depth", async function () {
      const input = inputFor();
      const depth = Number(input.stateTreeDepth);
      const siblings = [...(input.stateSiblings as string[])];
      siblings[depth - 1] = "0";
      const index = Number(input.stateIndex) % 2 ** (depth - 1);
      await expectNoWitness({ ...withParts(input, { stateTreeDepth: BigInt(depth - 1) }), stateIndex: String(index), stateSiblings: siblings });
    });

    it("rejects a depth beyond the maximum", async function () {
      await expectNoWitness(withParts(inputFor(), { aspTreeDepth: 33n }));
    });

    it("rejects index bits above the declared depth", async function () {
      const input = inputFor();
      const depth = Number(input.stateTreeDepth);
      const shifted = BigInt(input.stateIndex as string) + (1n << BigInt(depth));
      await expectNoWitness({ ...input, stateIndex: shifted.toString() });
    });

    it("rejects a right child without a left sibling", async function () {
      // Leaf 0 of a 2-leaf tree with its index bit flipped and its sibling removed recomputes the leaf itself.
      const input = inputFor({ stateLeavesBefore: 0, stateLeavesAfter: 1 });
      const siblings = [...(input.stateSiblings as string[])];
      siblings[0] = "0";
      await expectNoWitness({ ...input, stateIndex: "1", stateSiblings: siblings });
    });
  });

  describe("soundness: the spent note's form", function () {
    it("rejects a refund note spent as a deposit note: its leaf is not Poseidon(value, label, precommitment)", async function () {
      await expectNoWitness({ ...inputFor({ form: "refund" }), existingIsRefund: "0" });
    });

    it("rejects a deposit note spent as a refund note", async function () {
      await expectNoWitness({ ...inputFor(), existingIsRefund: "1" });
    });

    it("rejects a form flag that is no bit, which would make any leaf of the tree the spent note's (minting)", async function () {
      // Another value than the tree's note: both of its forms are leaves of no tree, but a flag f with
      // c + f * (r - c) == the tree's leaf selects that leaf. Only the flag's bit constraint stands in the way.
      const { note, request } = buildWithdrawScenario({ value: 5_000_000n });
      const input = buildWithdrawInput(request);
      const forged = { ...note, value: 9_000_000n };
      const c = createNote(forged.value, forged.label, forged).commitment;
      const r = createNote(forged.value, forged.label, forged, "refund").commitment;
      const mod = (x: bigint) => ((x % SNARK_SCALAR_FIELD) + SNARK_SCALAR_FIELD) % SNARK_SCALAR_FIELD;
      const flag = mod((note.commitment - c) * inverse(mod(r - c)));
      expect(mod(c + flag * (r - c))).to.equal(note.commitment);
      await expectNoWitness({ ...input, existingValue: forged.value.toString(), existingIsRefund: flag.toString() });
    });
  });

  describe("soundness: the fee and the refund anchor", function () {
    it("rejects a fee above 10000 bps, which would make the payout negative", async function () {
      await expectNoWitness(withParts(inputFor(), { relayFeeBPS: 10_001n }));
    });

    it("rejects a fee that is no 14-bit number (the field element standing for -1 bps)", async function () {
      const input = withParts(inputFor(), { relayFeeBPS: SNARK_SCALAR_FIELD - 1n });
      await expectNoWitness({ ...input, valueFeeAndDepths: (BigInt(input.valueFeeAndDepths as string) % SNARK_SCALAR_FIELD).toString() });
    });

    it("rejects a refund anchor of another label or precommitment than proven", async function () {
      const { request } = buildWithdrawScenario();
      const proof = await proveWithdrawal(buildWithdrawInput(request));
      const index = WITHDRAW_PUBLIC_SIGNALS.indexOf("refundAnchor");
      for (const anchor of [refundAnchorOf(request.note.label + 1n, request.refundPrecommitment), refundAnchorOf(request.note.label, request.refundPrecommitment + 1n)]) {
        const publicSignals = [...proof.publicSignals];
        publicSignals[index] = anchor.toString();
        expect(await verifyWithdrawal({ proof: proof.proof, publicSignals }, verificationKey)).to.equal(false);
      }
    });
  });

  describe("soundness: the packed public input", function () {
    it("rejects a packed value that disagrees with its parts", async function () {
      const input = inputFor();
      await expectNoWitness({ ...input, valueFeeAndDepths: (BigInt(input.valueFeeAndDepths as string) + 1n).toString() });
    });

    it("rejects a withdrawn value of 2^128 or more that borrows from the state depth (same packed value)", async function () {
      const input = inputFor();
      const depth = BigInt(input.stateTreeDepth as string);
      const shifted = withParts(input, { withdrawnValue: BigInt(input.withdrawnValue as string) + (1n << 128n), stateTreeDepth: depth - 1n });
      expect(shifted.valueFeeAndDepths).to.equal(input.valueFeeAndDepths);
      await expectNoWitness(shifted);
    });

    it("rejects a state depth of 256 or more that borrows from the ASP depth (same packed value)", async function () {
      const input = inputFor();
      const stateTreeDepth = BigInt(input.stateTreeDepth as string) + 256n;
      const shifted = withParts(input, { stateTreeDepth, aspTreeDepth: BigInt(input.aspTreeDepth as string) - 1n });
      expect(shifted.valueFeeAndDepths).to.equal(input.valueFeeAndDepths);
      await expectNoWitness(shifted);
    });
  });

  describe("soundness: a proof is bound to its public signals", function () {
    let valid: WithdrawProof;

    before(async function () {
      valid = await proveWithdrawal(inputFor());
    });

    for (const name of ["context", "valueFeeAndDepths", "newCommitment", "refundAnchor"] as const) {
      it(`fails verification when ${name} is changed after proving`, async function () {
        const index = WITHDRAW_PUBLIC_SIGNALS.indexOf(name);
        const publicSignals = [...valid.publicSignals];
        publicSignals[index] = (BigInt(publicSignals[index]!) + 1n).toString();
        expect(await verifyWithdrawal({ proof: valid.proof, publicSignals }, verificationKey)).to.equal(false);
      });
    }
  });
});

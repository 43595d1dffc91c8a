import { expect } from "chai";
import { ServiceDepositSchema } from "../../relayer/schemas/note.js";
import { createNote, type Note } from "../../sdk/index.js";

const wire = (note: Note) => ({
  nullifier: note.nullifier.toString(),
  secret: note.secret.toString(),
  value: note.value.toString(),
  label: note.label.toString(),
  commitment: note.commitment.toString(),
});

describe("serviceDeposit: the note a custodial request sends", function () {
  const secrets = { nullifier: 101n, secret: 202n };

  it("takes the note's form from its commitment: a deposit's, or a refund note's (a payout or a tab's rest that came back)", function () {
    for (const form of ["deposit", "refund"] as const) {
      const note = createNote(95_000n, 7n, secrets, form);
      expect(ServiceDepositSchema.parse(wire(note))).to.deep.equal(note);
    }
  });

  it("passes parts that make neither form on as a deposit note, which the spend then refuses as malformed", function () {
    const note = createNote(95_000n, 7n, secrets, "refund");
    expect(ServiceDepositSchema.parse({ ...wire(note), value: "95001" })).to.include({ form: "deposit" });
  });
});

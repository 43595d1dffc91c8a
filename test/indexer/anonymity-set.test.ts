import { expect } from "chai";
import { anonymitySet, type ScreenedDeposit } from "../../indexer/anonymity-set.js";
import { addressOf } from "./helpers/builders.js";

const policy = { minimumDeposit: 1_000_000n, operatorAddresses: [addressOf(9)] };

function buildScreened(overrides: Partial<ScreenedDeposit> = {}): ScreenedDeposit {
  return { depositor: addressOf(1), value: 1_000_000n, approved: true, ragequit: false, ...overrides };
}

describe("anonymity set", function () {
  it("counts distinct depositors, not deposits", function () {
    const deposits = [
      buildScreened(),
      buildScreened(),
      buildScreened({ value: 5_000_000n }),
      buildScreened({ depositor: addressOf(2) }),
    ];
    expect(anonymitySet(deposits, policy)).to.equal(2);
  });

  it("leaves out excluded, small, taken-back and operator deposits", function () {
    const deposits = [
      buildScreened({ depositor: addressOf(1), approved: false }),
      buildScreened({ depositor: addressOf(2), value: 999_999n }),
      buildScreened({ depositor: addressOf(3), ragequit: true }),
      buildScreened({ depositor: addressOf(9) }),
      buildScreened({ depositor: addressOf(4) }),
    ];
    expect(anonymitySet(deposits, policy)).to.equal(1);
  });

  it("counts a depositor once it has any deposit that qualifies", function () {
    const deposits = [buildScreened({ value: 1n }), buildScreened({ approved: false }), buildScreened()];
    expect(anonymitySet(deposits, policy)).to.equal(1);
  });

  it("counts for a payment only the depositors with a deposit of at least what it withdraws, never fewer than the minimum", function () {
    const deposits = [
      buildScreened({ depositor: addressOf(1), value: 1_000_000n }),
      buildScreened({ depositor: addressOf(2), value: 1_052_632n }),
      buildScreened({ depositor: addressOf(3), value: 2_000_000n }),
      buildScreened({ depositor: addressOf(9), value: 5_000_000n }),
    ];
    expect(anonymitySet(deposits, policy, 50_000n)).to.equal(3);
    expect(anonymitySet(deposits, policy, 1_000_000n)).to.equal(3);
    expect(anonymitySet(deposits, policy, 1_052_632n)).to.equal(2);
    expect(anonymitySet(deposits, policy, 2_000_001n)).to.equal(0);
  });
});

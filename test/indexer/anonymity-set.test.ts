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
});

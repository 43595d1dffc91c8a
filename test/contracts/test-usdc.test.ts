import { expect } from "chai";
import { id, TypedDataEncoder, type ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import type { TestUSDC } from "../../types/ethers-contracts/index.js";
import {
  buildAuthorization,
  domainOf,
  signAuthorization,
  signCancellation,
  splitSignature,
  type Authorization,
  type AuthorizationKind,
} from "./helpers/authorizations.js";
import { deployedFacilitator } from "./helpers/fixtures.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const VALUE = 250_000n;
const SIGNATURE_FORMS = ["v, r, s", "bytes"] as const;
type SignatureForm = (typeof SIGNATURE_FORMS)[number];

/** Calls the (v, r, s) or the `bytes signature` overload of an EIP-3009 function. */
function sendSigned(
  usdc: TestUSDC,
  method: string,
  argTypes: string,
  args: unknown[],
  form: SignatureForm,
  signature: string,
): Promise<ContractTransactionResponse> {
  return form === "bytes"
    ? usdc.getFunction(`${method}(${argTypes},bytes)`).send(...args, signature)
    : usdc.getFunction(`${method}(${argTypes},uint8,bytes32,bytes32)`).send(...args, ...splitSignature(signature));
}

const AUTHORIZATION_TYPES = "address,address,uint256,uint256,uint256,bytes32";

const sendCancellation = (usdc: TestUSDC, authorizer: string, nonce: string, form: SignatureForm, signature: string) =>
  sendSigned(usdc, "cancelAuthorization", "address,bytes32", [authorizer, nonce], form, signature);
const authorizationArgs = (a: Authorization) => [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce];

const METHOD_OF: Record<AuthorizationKind, string> = {
  TransferWithAuthorization: "transferWithAuthorization",
  ReceiveWithAuthorization: "receiveWithAuthorization",
};

/** Signs `authorization` as `kind` by its payer and submits it through the matching function. */
async function useAuthorization(
  usdc: TestUSDC,
  kind: AuthorizationKind,
  authorization: Authorization,
  form: SignatureForm = "v, r, s",
  signer = authorization.from,
) {
  const signature = await signAuthorization(await ethers.getSigner(signer), usdc, kind, authorization);
  return sendSigned(usdc, METHOD_OF[kind], AUTHORIZATION_TYPES, authorizationArgs(authorization), form, signature);
}

/** The deployment's TestUSDC with a funded payer, and builders of payments of VALUE from it to the payee. */
async function fundedPayer() {
  const { usdc, accounts } = await loadFixture(deployedFacilitator);
  const { depositor: payer, recipient: payee, stranger: submitter } = accounts;
  await usdc.mint(payer, 10n * VALUE);
  const now = await time.latest();
  const payment = (nonceTag: string, overrides: Partial<Authorization> = {}) =>
    buildAuthorization(now, { from: payer.address, to: payee.address, value: VALUE, nonce: id(nonceTag) }, overrides);
  return { usdc, payer, payee, submitter, payment, now };
}

describe("TestUSDC", function () {
  it("has USDC's metadata and the EIP-712 domain of USDC on Base Sepolia", async function () {
    const { usdc } = await loadFixture(deployedFacilitator);
    const domain = await domainOf(usdc);

    expect(await usdc.symbol()).to.equal("USDC");
    expect(await usdc.decimals()).to.equal(6n);
    expect([domain.name, domain.version]).to.deep.equal(["USDC", "2"]);
    expect(await usdc.DOMAIN_SEPARATOR()).to.equal(TypedDataEncoder.hashDomain(domain));
    expect(await usdc.TRANSFER_WITH_AUTHORIZATION_TYPEHASH()).to.equal(
      id("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"),
    );
    expect(await usdc.RECEIVE_WITH_AUTHORIZATION_TYPEHASH()).to.equal(
      id("ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"),
    );
    expect(await usdc.CANCEL_AUTHORIZATION_TYPEHASH()).to.equal(
      id("CancelAuthorization(address authorizer,bytes32 nonce)"),
    );
  });

  it("mints only for its owner", async function () {
    const { usdc, accounts } = await loadFixture(deployedFacilitator);
    await expect(usdc.connect(accounts.stranger).mint(accounts.stranger, VALUE))
      .to.be.revertedWithCustomError(usdc, "OwnableUnauthorizedAccount")
      .withArgs(accounts.stranger.address);
  });

  for (const form of SIGNATURE_FORMS) {
    it(`transfers with an authorization signed as ${form}, submitted by anyone`, async function () {
      const { usdc, payer, payee, submitter, payment } = await loadFixture(fundedPayer);
      const authorization = payment("transfer");

      const transfer = useAuthorization(usdc.connect(submitter), "TransferWithAuthorization", authorization, form);
      await expect(transfer).to.changeTokenBalances(ethers, usdc, [payer, payee, submitter], [-VALUE, VALUE, 0n]);
      await expect(transfer).to.emit(usdc, "AuthorizationUsed").withArgs(payer.address, authorization.nonce);
      expect(await usdc.authorizationState(payer, authorization.nonce)).to.equal(true);
    });

    it(`lets the payee receive with an authorization signed as ${form}`, async function () {
      const { usdc, payer, payee, payment } = await loadFixture(fundedPayer);
      const authorization = payment("receive");

      const receive = useAuthorization(usdc.connect(payee), "ReceiveWithAuthorization", authorization, form);
      await expect(receive).to.changeTokenBalances(ethers, usdc, [payer, payee], [-VALUE, VALUE]);
      await expect(receive).to.emit(usdc, "AuthorizationUsed").withArgs(payer.address, authorization.nonce);
    });

    it(`cancels an unused authorization signed as ${form}, which then cannot be used`, async function () {
      const { usdc, payer, submitter, payment } = await loadFixture(fundedPayer);
      const authorization = payment("cancelled");
      const signature = await signCancellation(payer, usdc, authorization.nonce);

      await expect(sendCancellation(usdc.connect(submitter), payer.address, authorization.nonce, form, signature))
        .to.emit(usdc, "AuthorizationCanceled")
        .withArgs(payer.address, authorization.nonce);
      expect(await usdc.authorizationState(payer, authorization.nonce)).to.equal(true);
      await expect(
        useAuthorization(usdc, "TransferWithAuthorization", authorization),
      ).to.be.revertedWithCustomError(usdc, "AuthorizationUsedOrCanceled");
    });
  }

  it("rejects receiveWithAuthorization submitted by anyone but the payee", async function () {
    const { usdc, submitter, payment } = await loadFixture(fundedPayer);
    await expect(
      useAuthorization(usdc.connect(submitter), "ReceiveWithAuthorization", payment("receive")),
    ).to.be.revertedWithCustomError(usdc, "CallerNotPayee");
  });

  it("rejects an authorization before its validAfter", async function () {
    const { usdc, payment, now } = await loadFixture(fundedPayer);
    const authorization = payment("early", { validAfter: BigInt(now + 60) });
    await expect(useAuthorization(usdc, "TransferWithAuthorization", authorization)).to.be.revertedWithCustomError(
      usdc,
      "AuthorizationNotYetValid",
    );
  });

  it("rejects an authorization at or after its validBefore", async function () {
    const { usdc, payment, now } = await loadFixture(fundedPayer);
    const authorization = payment("late", { validBefore: BigInt(now + 30) });
    await time.increaseTo(now + 30);
    await expect(useAuthorization(usdc, "TransferWithAuthorization", authorization)).to.be.revertedWithCustomError(
      usdc,
      "AuthorizationExpired",
    );
  });

  it("rejects a nonce that was already used", async function () {
    const { usdc, payment } = await loadFixture(fundedPayer);
    const authorization = payment("once");
    await useAuthorization(usdc, "TransferWithAuthorization", authorization);

    await expect(useAuthorization(usdc, "TransferWithAuthorization", authorization)).to.be.revertedWithCustomError(
      usdc,
      "AuthorizationUsedOrCanceled",
    );
  });

  it("rejects cancelling an authorization that was already used", async function () {
    const { usdc, payer, payment } = await loadFixture(fundedPayer);
    const authorization = payment("used");
    await useAuthorization(usdc, "TransferWithAuthorization", authorization);
    const signature = await signCancellation(payer, usdc, authorization.nonce);

    await expect(
      sendCancellation(usdc, payer.address, authorization.nonce, "bytes", signature),
    ).to.be.revertedWithCustomError(usdc, "AuthorizationUsedOrCanceled");
  });

  it("rejects a signature by anyone but the payer, over other terms, or for the other authorization type", async function () {
    const { usdc, payee, payer, submitter, payment } = await loadFixture(fundedPayer);
    const authorization = payment("forged");
    const signedByPayer = await signAuthorization(payer, usdc, "TransferWithAuthorization", authorization);
    const raised = authorizationArgs({ ...authorization, value: 2n * VALUE });

    for (const attempt of [
      () => useAuthorization(usdc, "TransferWithAuthorization", authorization, "bytes", submitter.address),
      () => sendSigned(usdc, "transferWithAuthorization", AUTHORIZATION_TYPES, raised, "v, r, s", signedByPayer),
      // A ReceiveWithAuthorization must not be usable through transferWithAuthorization, nor the reverse.
      async () =>
        sendSigned(
          usdc,
          "transferWithAuthorization",
          AUTHORIZATION_TYPES,
          authorizationArgs(authorization),
          "bytes",
          await signAuthorization(payer, usdc, "ReceiveWithAuthorization", authorization),
        ),
      () =>
        sendSigned(
          usdc.connect(payee),
          "receiveWithAuthorization",
          AUTHORIZATION_TYPES,
          authorizationArgs(authorization),
          "bytes",
          signedByPayer,
        ),
    ]) {
      await expect(attempt()).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    }
  });

  it("rejects a cancellation not signed by the authorizer", async function () {
    const { usdc, payer, submitter } = await loadFixture(fundedPayer);
    const signature = await signCancellation(submitter, usdc, id("cancel"));
    await expect(sendCancellation(usdc, payer.address, id("cancel"), "v, r, s", signature)).to.be.revertedWithCustomError(
      usdc,
      "InvalidSignature",
    );
  });
});

import { expect } from "chai";
import { AbiCoder, concat, hexlify, keccak256, randomBytes, toBeHex, TypedDataEncoder } from "ethers";
import { network } from "hardhat";
import {
  encodePoolAuthorization,
  namePublicSignals,
  nullifierHashOf,
  refundCommitmentOf,
  type PoolAuthorization,
} from "../../sdk/index.js";
import { eip3009Types } from "../../sdk/x402/eip712-domain.js";
import { poolAuthorizationDigest, poolAuthorizationPayload, poolAuthorizationRecord, poolAuthorizationSignature } from "../../sdk/x402/pool-authorization.js";
import { deployedFacilitator } from "./helpers/fixtures.js";
import { approvedNote } from "./helpers/notes.js";
import { provePoolAuthorization, type RelayedWithdrawal } from "./helpers/withdrawals.js";

const { ethers, networkHelpers } = await network.create();
const { loadFixture, time } = networkHelpers;

const NOTE_VALUE = 5_000_000n;
const FEE_BPS = 100n;
/** Withdrawn 1,010,101: 1% is 10,101, and the seller's price is the rest. */
const WITHDRAWN = 1_010_101n;
const PRICE = WITHDRAWN - (WITHDRAWN * FEE_BPS) / 10_000n;
const WINDOW_SECONDS = 3_600n;
const ERC1271_MAGIC = "0x1626ba7e";
const NOT_VALID = "0xffffffff";

/** One note, its label approved; a seller that already holds USDC, as a live one does. */
async function poolWithNote() {
  const facilitator = await loadFixture(deployedFacilitator);
  const approved = await approvedNote(facilitator, NOTE_VALUE, 7n);
  await facilitator.usdc.mint(facilitator.accounts.recipient, 1n);
  return { ...facilitator, ...approved };
}

type Pool = Awaited<ReturnType<typeof poolWithNote>>;

function authorizationFor(pool: Pool, now: bigint, overrides: Partial<PoolAuthorization> = {}): PoolAuthorization {
  return {
    payTo: pool.accounts.recipient.address,
    value: PRICE,
    validAfter: now - 600n,
    validBefore: now + WINDOW_SECONDS,
    nonce: toBeHex(nullifierHashOf(pool.note.nullifier), 32),
    feeRecipient: pool.accounts.feeRecipient.address,
    relayFeeBPS: FEE_BPS,
    ...overrides,
  };
}

async function proveFor(pool: Pool, authorization: PoolAuthorization, extra: { withdrawnValue?: bigint; relayFeeBPS?: bigint } = {}) {
  return provePoolAuthorization({
    note: pool.note,
    stateTree: pool.stateTree,
    aspTree: pool.aspTree,
    entrypoint: await pool.entrypoint.getAddress(),
    scope: pool.scope,
    authorization,
    withdrawnValue: extra.withdrawnValue ?? WITHDRAWN,
    ...(extra.relayFeeBPS !== undefined && { relayFeeBPS: extra.relayFeeBPS }),
  });
}

const transferOf = ({ payTo, value, validAfter, validBefore }: PoolAuthorization) => ({ payTo, value, validAfter, validBefore });
const anchorOf = (paid: RelayedWithdrawal) => namePublicSignals(paid.proof.pubSignals).refundAnchor;

/** The token's own transferWithAuthorization (bytes overload), as x402's `exact` facilitator settles a contract payer. */
async function pull(pool: Pool, authorization: PoolAuthorization, signature: string, sender = pool.accounts.stranger) {
  return pool.usdc
    .connect(sender)
    ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
      await pool.privacyPool.getAddress(),
      authorization.payTo,
      authorization.value,
      authorization.validAfter,
      authorization.validBefore,
      authorization.nonce,
      signature,
    );
}

describe("the pool as an exact seller's payer (PoolAuthorization)", function () {
  let authorization: PoolAuthorization;
  let paid: RelayedWithdrawal;

  before(async function () {
    const pool = await loadFixture(poolWithNote);
    authorization = authorizationFor(pool, BigInt(await time.latest()));
    paid = await proveFor(pool, authorization);
  });

  async function relayed() {
    const pool = await loadFixture(poolWithNote);
    await pool.entrypoint.connect(pool.accounts.stranger).relay(paid.withdrawal, paid.proof, pool.scope, paid.stateTreeSize);
    const separator = await pool.usdc.DOMAIN_SEPARATOR();
    const poolAddress = await pool.privacyPool.getAddress();
    return { ...pool, separator, poolAddress, signature: poolAuthorizationSignature(nullifierHashOf(pool.note.nullifier), anchorOf(paid)) };
  }

  it("moves nothing at the relay, whoever sends it: the price stays in the pool, the fee accrues, the record is the authorization", async function () {
    const pool = await loadFixture(poolWithNote);
    const { entrypoint, privacyPool, usdc, scope, accounts, note } = pool;
    const relay = entrypoint.connect(accounts.stranger).relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize);
    await expect(relay).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.recipient, accounts.stranger, entrypoint], [0n, 0n, 0n, 0n]);
    await expect(relay).to.emit(privacyPool, "Withdrawn").withArgs(WITHDRAWN, nullifierHashOf(note.nullifier), paid.changeNote.commitment);
    expect(await privacyPool.accruedFeesOf(accounts.feeRecipient)).to.equal(WITHDRAWN - PRICE);
    const digest = poolAuthorizationDigest(await usdc.DOMAIN_SEPARATOR(), await privacyPool.getAddress(), authorization);
    expect(await privacyPool.spendRecordOf(nullifierHashOf(note.nullifier))).to.equal(poolAuthorizationRecord(digest, anchorOf(paid)));
  });

  it("answers ERC-1271 for exactly the authorized transfer: no other payee, value, window, nonce, anchor, kind or encoding", async function () {
    const { privacyPool, separator, poolAddress, signature, accounts } = await relayed();
    const digestOf = (change: Partial<PoolAuthorization>) => poolAuthorizationDigest(separator, poolAddress, { ...authorization, ...change });
    expect(await privacyPool.isValidSignature(digestOf({}), signature)).to.equal(ERC1271_MAGIC);
    const others: Partial<PoolAuthorization>[] = [
      { payTo: accounts.stranger.address },
      { value: PRICE + 1n },
      { validAfter: authorization.validAfter - 1n },
      { validBefore: authorization.validBefore + 1n },
      { nonce: hexlify(randomBytes(32)) },
    ];
    for (const change of others) expect(await privacyPool.isValidSignature(digestOf(change), signature)).to.equal(NOT_VALID);
    // The same fields as a ReceiveWithAuthorization (which a payee contract could call) are another digest.
    const message = { from: poolAddress, to: authorization.payTo, value: authorization.value, validAfter: authorization.validAfter, validBefore: authorization.validBefore, nonce: authorization.nonce };
    const receive = keccak256(concat(["0x1901", separator, TypedDataEncoder.from(eip3009Types("ReceiveWithAuthorization")).hash(message)]));
    expect(await privacyPool.isValidSignature(receive, signature)).to.equal(NOT_VALID);
    const nullifierHash = nullifierHashOf((await loadFixture(poolWithNote)).note.nullifier);
    expect(await privacyPool.isValidSignature(digestOf({}), poolAuthorizationSignature(nullifierHash, anchorOf(paid) + 1n))).to.equal(NOT_VALID);
    expect(await privacyPool.isValidSignature(digestOf({}), poolAuthorizationSignature(nullifierHash + 1n, anchorOf(paid)))).to.equal(NOT_VALID);
    expect(await privacyPool.isValidSignature(digestOf({}), signature + "00")).to.equal(NOT_VALID);
    const packed = AbiCoder.defaultAbiCoder().encode(["uint256", "uint256", "uint8"], [nullifierHash, anchorOf(paid), 27]).slice(0, 2 + 130);
    expect(await privacyPool.isValidSignature(digestOf({}), packed)).to.equal(NOT_VALID);
  });

  it("lets the token pay the seller exactly the price from the pool, once, whoever submits it", async function () {
    const pool = await relayed();
    const { usdc, privacyPool, accounts, signature } = pool;
    await expect(pull(pool, authorization, signature)).to.changeTokenBalances(
      ethers,
      usdc,
      [privacyPool, accounts.recipient, accounts.stranger],
      [-PRICE, PRICE, 0n],
    );
    await expect(pull(pool, authorization, signature)).to.be.revertedWithCustomError(usdc, "AuthorizationUsedOrCanceled");
  });

  it("pays no one else: another payee, a larger value or a later window is refused by the token", async function () {
    const pool = await relayed();
    const { usdc, accounts, signature } = pool;
    for (const change of [{ payTo: accounts.stranger.address }, { value: PRICE + 1n }, { validBefore: authorization.validBefore + 1n }]) {
      await expect(pull(pool, { ...authorization, ...change }, signature)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    }
  });

  it("gives the operator, with every role of the entrypoint, no way to move the authorized price", async function () {
    const pool = await relayed();
    const { entrypoint, privacyPool, usdc, accounts, note, signature, poolAddress } = pool;
    const operator = accounts.admin;
    const before = await usdc.balanceOf(poolAddress);
    // To itself, by the pool's "signature".
    await expect(pull(pool, { ...authorization, payTo: operator.address }, signature, operator)).to.be.revertedWithCustomError(usdc, "InvalidSignature");
    await time.increaseTo(authorization.validBefore);
    // As a refund of the authorization at another value or anchor: the pool checks both against its record.
    await expect(entrypoint.connect(operator).refundAuthorization(usdc, nullifierHashOf(note.nullifier), transferOf({ ...authorization, value: PRICE + 1n }), anchorOf(paid)))
      .to.be.revertedWithCustomError(privacyPool, "RefundNotRecorded");
    await expect(entrypoint.connect(operator).refundAuthorization(usdc, nullifierHashOf(note.nullifier), transferOf(authorization), anchorOf(paid) + 1n))
      .to.be.revertedWithCustomError(privacyPool, "RefundNotRecorded");
    expect(await usdc.balanceOf(poolAddress)).to.equal(before);
  });

  it("returns an unused authorization as the agent's refund note through anyone's call, once, after validBefore only", async function () {
    const pool = await relayed();
    const { entrypoint, privacyPool, usdc, accounts, note, signature, separator, poolAddress } = pool;
    const origin = nullifierHashOf(note.nullifier);
    const refund = () => entrypoint.connect(accounts.stranger).refundAuthorization(usdc, origin, transferOf(authorization), anchorOf(paid));
    await expect(refund()).to.be.revertedWithCustomError(entrypoint, "PaymentNotExpired");
    await time.increaseTo(authorization.validBefore);
    const commitment = refundCommitmentOf(PRICE, anchorOf(paid));
    const first = refund();
    await expect(first).to.emit(entrypoint, "RefundDeposited").withArgs(poolAddress, commitment, origin, PRICE);
    await expect(first).to.emit(privacyPool, "LeafInserted");
    await expect(first).to.changeTokenBalances(ethers, usdc, [privacyPool, accounts.stranger, entrypoint], [0n, 0n, 0n]);
    await expect(refund()).to.be.revertedWithCustomError(privacyPool, "OriginAlreadyRefunded");
    const digest = poolAuthorizationDigest(separator, poolAddress, authorization);
    expect(await privacyPool.isValidSignature(digest, signature)).to.equal(NOT_VALID);
  });

  it("refunds nothing the seller took", async function () {
    const pool = await relayed();
    const { entrypoint, usdc, accounts, note, signature } = pool;
    await pull(pool, authorization, signature);
    await time.increaseTo(authorization.validBefore);
    await expect(
      entrypoint.connect(accounts.stranger).refundAuthorization(usdc, nullifierHashOf(note.nullifier), transferOf(authorization), anchorOf(paid)),
    ).to.be.revertedWithCustomError(entrypoint, "PaymentAlreadyUsed");
  });

  it("refuses a relay whose nonce is not the note's nullifier hash, whose value is not the rest, or that comes too late", async function () {
    const pool = await loadFixture(poolWithNote);
    const { entrypoint, scope } = pool;
    const now = BigInt(await time.latest());
    const { maxRelayFeeBPS } = await entrypoint.assetConfig(pool.usdc);
    const aboveMaximum = maxRelayFeeBPS + 1n;
    const cases: [Partial<PoolAuthorization>, string][] = [
      [{ nonce: hexlify(randomBytes(32)) }, "AuthorizationNonceMismatch"],
      [{ value: PRICE - 1n }, "AuthorizationValueMismatch"],
      [{ relayFeeBPS: aboveMaximum, value: WITHDRAWN - (WITHDRAWN * aboveMaximum) / 10_000n }, "RelayFeeAboveMaximum"],
    ];
    for (const [change, error] of cases) {
      const proven = await proveFor(pool, authorizationFor(pool, now, change));
      await expect(entrypoint.relay(proven.withdrawal, proven.proof, scope, proven.stateTreeSize), error).to.be.revertedWithCustomError(entrypoint, error);
    }
    const otherRate = await proveFor(pool, authorization, { relayFeeBPS: 0n });
    await expect(entrypoint.relay(otherRate.withdrawal, otherRate.proof, scope, otherRate.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "RelayFeeMismatch");
    await time.increaseTo(authorization.validBefore);
    await expect(entrypoint.relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "AuthorizationExpired");
  });

  it("refuses terms the proof does not bind, and a copy of the relay once it is spent", async function () {
    const pool = await loadFixture(poolWithNote);
    const { entrypoint, privacyPool, scope, accounts } = pool;
    for (const change of [{ payTo: accounts.stranger.address }, { validBefore: authorization.validBefore + 1n }, { feeRecipient: accounts.stranger.address }]) {
      const withdrawal = { ...paid.withdrawal, data: encodePoolAuthorization({ ...authorization, ...change }) };
      await expect(entrypoint.relay(withdrawal, paid.proof, scope, paid.stateTreeSize)).to.be.revertedWithCustomError(entrypoint, "ContextMismatch");
    }
    await entrypoint.relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize);
    await expect(entrypoint.connect(accounts.stranger).relay(paid.withdrawal, paid.proof, scope, paid.stateTreeSize)).to.be.revertedWithCustomError(
      privacyPool,
      "NullifierAlreadySpent",
    );
  });

  it("makes the x402 payload the token takes: from the pool, 64-byte signature, unique per note", async function () {
    const pool = await relayed();
    const payload = poolAuthorizationPayload(pool.poolAddress, authorization, anchorOf(paid));
    expect(payload.authorization.from).to.equal(pool.poolAddress);
    expect((payload.signature.length - 2) / 2).to.equal(64);
    await expect(pull(pool, authorization, payload.signature)).to.changeTokenBalance(ethers, pool.usdc, pool.accounts.recipient, PRICE);
  });
});

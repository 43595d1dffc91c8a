import { expect } from "chai";
import { getAddress, toBeHex, zeroPadValue } from "ethers";
import type {
  AgentRecord,
  AuthorizationRecord,
  LeasePayment,
  LeaseRecord,
  LeaseState,
  RelayerStore,
  SweepRecord,
} from "../../../relayer/store/relayer-store.js";
import { hash1 } from "../../../sdk/index.js";

/** A fresh, empty database; every open() is another connection (another relayer process) to the same data. */
export interface StoreDatabase {
  open(): Promise<RelayerStore>;
}

/** How many relayer processes the races run: enough that a store without atomic writes loses reliably. */
const CONTENDERS = 20;

const fieldOf = (tag: number) => hash1(BigInt(tag));
const addressOf = (tag: number) => getAddress(zeroPadValue(toBeHex(0x2000 + tag), 20));
const txHashOf = (tag: number) => zeroPadValue(toBeHex(0xdef000 + tag), 32);

function buildLease(overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    nullifierHash: fieldOf(1),
    state: "reserved",
    token: "token-1",
    fingerprint: "f1".repeat(32),
    recipient: addressOf(1),
    gross: 1_000_000n,
    fee: 50_000n,
    changeCommitment: fieldOf(2),
    remainingValue: 4_000_000n,
    fundingTxHash: null,
    proofTimeMs: null,
    payment: null,
    // Long past, so that any advance moves it forward.
    updatedAt: "2020-01-01T00:00:00.000Z",
    ...overrides,
  };
}

function buildPayment(overrides: Partial<LeasePayment> = {}): LeasePayment {
  return { xPayment: "eyJ4NDAyVmVyc2lvbiI6Mn0=", validBefore: 1_000, nonce: `0x${"03".repeat(32)}`, refundAnchor: fieldOf(3), ...overrides };
}

function buildAuthorization(overrides: Partial<AuthorizationRecord> = {}): AuthorizationRecord {
  return {
    nullifierHash: fieldOf(10),
    network: "eip155:84532",
    accessTokenTxHash: txHashOf(1),
    amount: 1_000_000n,
    authorizedAt: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

function buildAgent(overrides: Partial<AgentRecord> = {}): AgentRecord {
  return {
    id: "agent_0123456789abcdef",
    name: "research-bot",
    publicKey: `0x02${"ab".repeat(32)}`,
    ownerWallet: addressOf(9),
    perTransactionLimit: 500_000n,
    dailyLimit: 800_000n,
    providerWhitelist: [addressOf(5), addressOf(6)],
    categories: ["data"],
    createdAt: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

function buildSweep(overrides: Partial<SweepRecord> = {}): SweepRecord {
  return {
    nullifierHash: fieldOf(1),
    payer: addressOf(3),
    amount: 250_000n,
    outcome: "used",
    depositTxHash: null,
    sweptAt: "2026-01-02T00:00:00.000Z",
    ...overrides,
  };
}

/**
 * The behaviour every RelayerStore backend must have, run against SQLite and PostgreSQL. Races go through
 * separate store instances, each its own connection, as several relayer processes sharing one database would.
 */
export function describeRelayerStore(backend: string, freshDatabase: () => Promise<StoreDatabase>): void {
  describe(`RelayerStore contract: ${backend}`, function () {
    const opened: RelayerStore[] = [];
    const open = async (database: StoreDatabase) => {
      const store = await database.open();
      opened.push(store);
      return store;
    };
    const openMany = (database: StoreDatabase, count: number) =>
      Promise.all(Array.from({ length: count }, () => open(database)));
    afterEach(async function () {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    /** A store holding the lease of `buildLease(overrides)` moved along `path` (from `reserved`). */
    async function storeWithLease(overrides: Partial<LeaseRecord>, path: LeaseState[]) {
      const database = await freshDatabase();
      const store = await open(database);
      const lease = buildLease(overrides);
      expect(await store.reserveLease(lease)).to.equal(true);
      let state: LeaseState = "reserved";
      for (const next of path) {
        expect(await store.advanceLease(lease.nullifierHash, lease.token, state, next)).to.equal(true);
        state = next;
      }
      return { database, store, lease };
    }

    describe("leases", function () {
      it("reserves a lease once and keeps the first reservation's terms", async function () {
        const store = await open(await freshDatabase());
        const lease = buildLease({ payment: buildPayment() });
        expect(await store.reserveLease(lease)).to.equal(true);
        expect(await store.reserveLease(buildLease({ fingerprint: "f2".repeat(32) }))).to.equal(false);
        expect(await store.getLease(lease.nullifierHash)).to.deep.equal(lease);
        expect(await store.getLease(fieldOf(99))).to.equal(undefined);
      });

      it("counts leases by state, every state present", async function () {
        const { store } = await storeWithLease({}, ["withdrawing", "settled"]);
        expect(await store.leaseCounts()).to.deep.equal({ reserved: 0, withdrawing: 0, settled: 1, failed: 0 });
        await store.reserveLease(buildLease({ nullifierHash: fieldOf(50), token: "token-50" }));
        expect(await store.leaseCounts()).to.deep.equal({ reserved: 1, withdrawing: 0, settled: 1, failed: 0 });
      });

      it("stores a lease with no x402 payment (withdraw, settle) as such", async function () {
        const store = await open(await freshDatabase());
        await store.reserveLease(buildLease({ payment: null }));
        expect((await store.getLease(fieldOf(1)))?.payment).to.equal(null);
      });

      it("keeps a remaining value only the agent knows (it proved the spend itself) as unknown, through its settlement", async function () {
        const { store, lease } = await storeWithLease({ remainingValue: null, payment: buildPayment() }, ["withdrawing", "settled"]);
        expect(await store.getLease(lease.nullifierHash)).to.deep.include({ state: "settled", remainingValue: null, changeCommitment: lease.changeCommitment });
      });

      it(`lets exactly one of ${CONTENDERS} relayers reserving one note at once win`, async function () {
        const stores = await openMany(await freshDatabase(), CONTENDERS);
        const leases = stores.map((_, i) => buildLease({ token: `token-${i}`, fingerprint: toBeHex(i + 1, 32).slice(2) }));
        const won = await Promise.all(stores.map((store, i) => store.reserveLease(leases[i]!)));

        expect(won.filter(Boolean)).to.have.length(1);
        const winner = leases[won.indexOf(true)]!;
        expect(await stores[0]!.getLease(winner.nullifierHash)).to.deep.equal(winner);
      });

      it("re-reserves a failed lease with the new terms and token, keeping the failed attempt's transaction", async function () {
        const { store, lease } = await storeWithLease({ payment: buildPayment() }, []);
        await store.advanceLease(lease.nullifierHash, lease.token, "reserved", "withdrawing", { fundingTxHash: txHashOf(7) });
        await store.advanceLease(lease.nullifierHash, lease.token, "withdrawing", "failed", { proofTimeMs: 900 });

        const retry = buildLease({
          token: "token-2",
          fingerprint: "f2".repeat(32),
          gross: 2_000_000n,
          updatedAt: "2026-01-03T00:00:00.000Z",
        });
        expect(await store.reserveLease(retry)).to.equal(true);
        expect(await store.getLease(lease.nullifierHash)).to.deep.equal({ ...retry, fundingTxHash: txHashOf(7) });
        // The failed reservation's token moves nothing anymore; the new one's does.
        expect(await store.advanceLease(lease.nullifierHash, lease.token, "reserved", "failed")).to.equal(false);
        expect(await store.advanceLease(lease.nullifierHash, "token-2", "reserved", "withdrawing", { fundingTxHash: txHashOf(8) })).to.equal(true);
        expect((await store.getLease(lease.nullifierHash))?.fundingTxHash).to.equal(txHashOf(8));
      });

      it(`lets exactly one of ${CONTENDERS} relayers re-reserving a failed lease at once win`, async function () {
        const { database } = await storeWithLease({}, ["failed"]);
        const stores = await openMany(database, CONTENDERS);
        const won = await Promise.all(
          stores.map((store, i) => store.reserveLease(buildLease({ fingerprint: toBeHex(i + 1, 32).slice(2) }))),
        );
        expect(won.filter(Boolean)).to.have.length(1);
        expect((await stores[0]!.getLease(fieldOf(1)))?.fingerprint).to.equal(
          toBeHex(won.indexOf(true) + 1, 32).slice(2),
        );
      });

      for (const path of [[], ["withdrawing"], ["withdrawing", "settled"]] as LeaseState[][]) {
        const state = path.at(-1) ?? "reserved";
        it(`refuses to re-reserve a ${state} lease`, async function () {
          const { store, lease } = await storeWithLease({}, path);
          expect(await store.reserveLease(buildLease({ fingerprint: "f2".repeat(32) }))).to.equal(false);
          expect(await store.getLease(lease.nullifierHash)).to.deep.include({ state, fingerprint: lease.fingerprint });
        });
      }

      it("advances a lease only from the state and reservation the caller saw, keeping fields it is not given", async function () {
        const { store, lease } = await storeWithLease({}, []);
        const hash = lease.nullifierHash;
        const { token } = lease;
        expect(await store.advanceLease(hash, token, "withdrawing", "settled")).to.equal(false);
        expect(await store.advanceLease(hash, "another reservation", "reserved", "withdrawing")).to.equal(false);
        // The holder's heartbeat: same state, fresh updatedAt.
        expect(await store.advanceLease(hash, token, "reserved", "reserved")).to.equal(true);
        const refreshed = (await store.getLease(hash))!.updatedAt;
        expect(refreshed > lease.updatedAt, "a heartbeat moves updatedAt").to.equal(true);
        expect(await store.advanceLease(hash, token, "reserved", "withdrawing", { fundingTxHash: txHashOf(7) })).to.equal(true);
        expect(await store.advanceLease(hash, token, "reserved", "withdrawing")).to.equal(false);
        expect(await store.advanceLease(hash, "another reservation", "withdrawing", "failed")).to.equal(false);
        expect(await store.advanceLease(hash, token, "withdrawing", "settled", { proofTimeMs: 1234 })).to.equal(true);
        expect(await store.advanceLease(fieldOf(99), token, "reserved", "withdrawing")).to.equal(false);

        const settled = await store.getLease(hash);
        expect(settled).to.deep.include({ state: "settled", fundingTxHash: txHashOf(7), proofTimeMs: 1234 });
        expect(settled!.updatedAt > lease.updatedAt, "updatedAt moves with each advance").to.equal(true);
      });

      it(`lets exactly one of ${CONTENDERS} relayers advancing one lease from the same state win`, async function () {
        const { database, lease } = await storeWithLease({}, []);
        const stores = await openMany(database, CONTENDERS);
        const moved = await Promise.all(
          stores.map((store, i) =>
            store.advanceLease(lease.nullifierHash, lease.token, "reserved", "withdrawing", { fundingTxHash: txHashOf(i) }),
          ),
        );
        expect(moved.filter(Boolean)).to.have.length(1);
        expect((await stores[0]!.getLease(lease.nullifierHash))?.fundingTxHash).to.equal(txHashOf(moved.indexOf(true)));
      });
    });

    describe("sweeps", function () {
      it("lists settled x402 leases whose authorization expired and that no sweep recorded, oldest first", async function () {
        const store = await open(await freshDatabase());
        const settle = async (tag: number, payment: LeasePayment | null, path: LeaseState[]) => {
          const lease = buildLease({ nullifierHash: fieldOf(tag), payment });
          await store.reserveLease(lease);
          let state: LeaseState = "reserved";
          for (const next of path) {
            await store.advanceLease(lease.nullifierHash, lease.token, state, next);
            state = next;
          }
        };
        const settled: LeaseState[] = ["withdrawing", "settled"];
        await settle(1, buildPayment({ validBefore: 200 }), settled);
        await settle(2, buildPayment({ validBefore: 50 }), settled);
        await settle(3, buildPayment({ validBefore: 201 }), settled);
        await settle(4, buildPayment({ validBefore: 10 }), ["withdrawing"]);
        await settle(5, buildPayment({ validBefore: 20 }), ["failed"]);
        await settle(6, null, settled);

        const expired = async () => (await store.expiredUnsweptLeases(200)).map((lease) => lease.nullifierHash);
        expect(await expired()).to.deep.equal([fieldOf(2), fieldOf(1)]);
        await store.recordSweep(buildSweep({ nullifierHash: fieldOf(2) }));
        expect(await expired()).to.deep.equal([fieldOf(1)]);
        expect((await store.expiredUnsweptLeases(200))[0]).to.deep.include({
          state: "settled",
          payment: buildPayment({ validBefore: 200 }),
        });
      });

      it("records a sweep, and a later sweep of the same payer replaces its outcome", async function () {
        const { store, lease } = await storeWithLease({ payment: buildPayment() }, ["withdrawing", "settled"]);
        const held = buildSweep({ nullifierHash: lease.nullifierHash, outcome: "used" });
        const deposited = buildSweep({
          nullifierHash: lease.nullifierHash,
          outcome: "deposited",
          amount: 1_500_000n,
          depositTxHash: txHashOf(8),
          sweptAt: "2026-01-05T00:00:00.000Z",
        });
        expect(await store.getSweep(lease.nullifierHash)).to.equal(undefined);
        await store.recordSweep(held);
        expect(await store.getSweep(lease.nullifierHash)).to.deep.equal(held);
        await store.recordSweep(deposited);
        expect(await store.getSweep(lease.nullifierHash)).to.deep.equal(deposited);
      });

      it("refuses a sweep of a lease it does not hold", async function () {
        const store = await open(await freshDatabase());
        await expectRejection(store.recordSweep(buildSweep({ nullifierHash: fieldOf(99) })));
        expect(await store.getSweep(fieldOf(99))).to.equal(undefined);
      });
    });

    describe("access-fee authorizations", function () {
      it("records each note one transaction pays the fee of, each once, whatever the letter case of its hash", async function () {
        const store = await open(await freshDatabase());
        const first = buildAuthorization({ nullifierHash: fieldOf(10), accessTokenTxHash: `0x${"ab".repeat(32)}` });
        expect(await store.authorizationOf(fieldOf(10))).to.equal(undefined);
        expect(await store.recordAuthorization(first)).to.equal(true);
        expect(await store.authorizationOf(fieldOf(10))).to.deep.equal({ inherited: false });

        const sameTransaction = buildAuthorization({ nullifierHash: fieldOf(11), accessTokenTxHash: `0x${"AB".repeat(32)}` });
        expect(await store.recordAuthorization(sameTransaction)).to.equal(true);
        expect(await store.authorizationOf(fieldOf(11))).to.deep.equal({ inherited: false });
        expect(await store.recordAuthorization(first)).to.equal(false);
      });

      it("refuses a second authorization of an authorized deposit", async function () {
        const store = await open(await freshDatabase());
        await store.recordAuthorization(buildAuthorization({ nullifierHash: fieldOf(10) }));
        const again = buildAuthorization({ nullifierHash: fieldOf(10), accessTokenTxHash: txHashOf(2) });
        expect(await store.recordAuthorization(again)).to.equal(false);
        // The refused transfer is still free to authorize another deposit.
        expect(await store.recordAuthorization({ ...again, nullifierHash: fieldOf(11) })).to.equal(true);
      });

      it(`lets exactly one of ${CONTENDERS} relayers recording one note's authorization at once win`, async function () {
        const stores = await openMany(await freshDatabase(), CONTENDERS);
        const recorded = await Promise.all(
          stores.map((store, i) => store.recordAuthorization(buildAuthorization({ nullifierHash: fieldOf(100), accessTokenTxHash: txHashOf(100 + i) }))),
        );
        expect(recorded.filter(Boolean)).to.have.length(1);
      });

      it("passes an authorization down a chain of change notes bound to the deposit's label, and nothing from an unauthorized note", async function () {
        const store = await open(await freshDatabase());
        const label = fieldOf(5);
        await store.recordAuthorization(buildAuthorization({ nullifierHash: fieldOf(10) }));
        await store.inheritAuthorization(fieldOf(10), fieldOf(11), label);
        await store.inheritAuthorization(fieldOf(11), fieldOf(12), label);
        await store.inheritAuthorization(fieldOf(50), fieldOf(51), label);

        expect(await store.authorizationOf(fieldOf(11))).to.deep.equal({ inherited: true, label });
        expect(await store.authorizationOf(fieldOf(12))).to.deep.equal({ inherited: true, label });
        expect(await store.authorizationOf(fieldOf(51))).to.equal(undefined);
        // Inheriting twice is harmless, and never rebinds: the first label stays.
        await store.inheritAuthorization(fieldOf(10), fieldOf(11), fieldOf(6));
        expect(await store.authorizationOf(fieldOf(11))).to.deep.equal({ inherited: true, label });
        // Nor does it touch a paid one.
        await store.inheritAuthorization(fieldOf(11), fieldOf(10), label);
        expect(await store.authorizationOf(fieldOf(10))).to.deep.equal({ inherited: false });
      });

      it("lets a fee paid naming a note replace the authorization carried over to it", async function () {
        const store = await open(await freshDatabase());
        await store.recordAuthorization(buildAuthorization({ nullifierHash: fieldOf(10) }));
        await store.inheritAuthorization(fieldOf(10), fieldOf(11), fieldOf(5));
        expect(await store.recordAuthorization(buildAuthorization({ nullifierHash: fieldOf(11), accessTokenTxHash: txHashOf(2) }))).to.equal(true);
        expect(await store.authorizationOf(fieldOf(11))).to.deep.equal({ inherited: false });
      });
    });

    describe("seller payments", function () {
      it("claims a payment's relay for its lease, again once given back, and takes over a claim whose lease lapsed", async function () {
        const store = await open(await freshDatabase());
        expect(await store.claimSellerPayment(fieldOf(7), 60)).to.equal(true);
        expect(await store.claimSellerPayment(fieldOf(7), 60)).to.equal(false);
        expect(await store.claimSellerPayment(fieldOf(8), 60), "another payment").to.equal(true);
        await store.releaseSellerPayment(fieldOf(7));
        expect(await store.claimSellerPayment(fieldOf(7), 60)).to.equal(true);
        // A settle that died holding a claim: its lease (0 s here) lapses, and the next settle takes the payment.
        expect(await store.claimSellerPayment(fieldOf(9), 0)).to.equal(true);
        expect(await store.claimSellerPayment(fieldOf(9), 60)).to.equal(true);
        expect(await store.claimSellerPayment(fieldOf(9), 60)).to.equal(false);
      });

      it(`lets exactly one of ${CONTENDERS} relayers settling one payment at once claim it`, async function () {
        const stores = await openMany(await freshDatabase(), CONTENDERS);
        const claimed = await Promise.all(stores.map((store) => store.claimSellerPayment(fieldOf(10), 60)));
        expect(claimed.filter(Boolean)).to.have.length(1);
      });
    });

    describe("agents", function () {
      it("creates agents, finds them by id and lists them in creation order", async function () {
        const store = await open(await freshDatabase());
        const later = buildAgent({
          id: "agent_00000000000000aa",
          createdAt: "2026-01-02T00:00:00.000Z",
          perTransactionLimit: 2n ** 128n - 1n,
          dailyLimit: 2n ** 128n - 1n,
          providerWhitelist: [],
          categories: [],
        });
        const earlier = buildAgent({ id: "agent_00000000000000bb", createdAt: "2026-01-01T00:00:00.000Z" });
        await store.createAgent(later);
        await store.createAgent(earlier);

        expect(await store.getAgent(later.id)).to.deep.equal(later);
        expect(await store.getAgent("agent_ffffffffffffffff")).to.equal(undefined);
        expect(await store.listAgents()).to.deep.equal([earlier, later]);
      });

      it("refuses a second agent with the same id", async function () {
        const store = await open(await freshDatabase());
        await store.createAgent(buildAgent());
        await expectRejection(store.createAgent(buildAgent({ name: "impostor" })));
        expect((await store.listAgents()).map((agent) => agent.name)).to.deep.equal(["research-bot"]);
      });

      it("adds up an agent's spend in total and for the day asked", async function () {
        const store = await open(await freshDatabase());
        const agent = buildAgent();
        const other = buildAgent({ id: "agent_fedcba9876543210" });
        await store.createAgent(agent);
        await store.createAgent(other);
        expect(await store.agentSpend(agent.id, "2026-01-01")).to.deep.equal({
          totalSpent: 0n,
          spentToday: 0n,
          transactionCount: 0,
        });

        await store.recordAgentSpend(agent.id, 100_000n, "2026-01-01");
        await store.recordAgentSpend(agent.id, 2n ** 127n, "2026-01-02");
        await store.recordAgentSpend(agent.id, 30_000n, "2026-01-02");
        await store.recordAgentSpend(other.id, 7n, "2026-01-02");

        expect(await store.agentSpend(agent.id, "2026-01-02")).to.deep.equal({
          totalSpent: 2n ** 127n + 130_000n,
          spentToday: 2n ** 127n + 30_000n,
          transactionCount: 3,
        });
        expect(await store.agentSpend(agent.id, "2026-01-03")).to.deep.include({ spentToday: 0n, transactionCount: 3 });
      });

      it(`loses none of ${CONTENDERS} spends recorded at once by as many relayers`, async function () {
        const database = await freshDatabase();
        const agent = buildAgent();
        await (await open(database)).createAgent(agent);
        const stores = await openMany(database, CONTENDERS);
        await Promise.all(stores.map((store, i) => store.recordAgentSpend(agent.id, BigInt(1_000 + i), "2026-01-01")));

        const expectedTotal = BigInt(CONTENDERS * 1_000 + (CONTENDERS * (CONTENDERS - 1)) / 2);
        expect(await stores[0]!.agentSpend(agent.id, "2026-01-01")).to.deep.equal({
          totalSpent: expectedTotal,
          spentToday: expectedTotal,
          transactionCount: CONTENDERS,
        });
      });

      it("refuses spend of an agent it does not hold", async function () {
        const store = await open(await freshDatabase());
        await expectRejection(store.recordAgentSpend("agent_ffffffffffffffff", 1n, "2026-01-01"));
      });
    });

    it("keeps everything across closing and reopening", async function () {
      const { database, store, lease } = await storeWithLease({ payment: buildPayment() }, ["withdrawing", "settled"]);
      await store.recordSweep(buildSweep());
      await store.recordAuthorization(buildAuthorization());
      await store.createAgent(buildAgent());
      await store.recordAgentSpend(buildAgent().id, 5n, "2026-01-01");
      await store.close();
      opened.splice(opened.indexOf(store), 1);

      const reopened = await open(database);
      expect(await reopened.getLease(lease.nullifierHash)).to.deep.include({
        state: "settled",
        payment: buildPayment(),
      });
      expect(await reopened.getSweep(lease.nullifierHash)).to.deep.equal(buildSweep());
      expect(await reopened.authorizationOf(buildAuthorization().nullifierHash)).to.deep.equal({ inherited: false });
      expect(await reopened.getAgent(buildAgent().id)).to.deep.equal(buildAgent());
      expect((await reopened.agentSpend(buildAgent().id, "2026-01-01")).spentToday).to.equal(5n);
    });
  });
}

async function expectRejection(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected a rejection").to.be.instanceOf(Error);
}

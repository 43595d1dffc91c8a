import { expect } from "chai";
import { PgRelayerStore } from "../../relayer/store/pg-store.js";
import { nullifierHashOf, type Note } from "../../sdk/index.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { settleX402Body } from "./helpers/relayer-harness.js";
import { relayerEnv, startRelayerProcess, type RelayerProcess } from "./helpers/relayer-process.js";

/** A connection string whose sessions use `schema`, so the relayers share the test's schema and nothing else. */
function urlWithSchema({ connectionString, schema }: TestSchema): string {
  const url = new URL(connectionString);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return url.toString();
}

/** Logged by a relayer each time it takes a lease and withdraws under it: a proof follows, at most one. */
const PROVING = "lease taken; proving and relaying the withdrawal";
const SETTLE_X402 = "/api/facilitator/settle-x402";

describe("two relayer processes on one PostgreSQL", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let schema: TestSchema;
  let env: Record<string, string>;
  const relayers: RelayerProcess[] = [];

  /** A fresh, ASP-approved note and a settle-x402 request for it. */
  const freshRequest = async (tag: number) => {
    const note = await deposit(chain, chain.depositors.bob, tag, 1_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    return { note, body: settleX402Body(chain, note, 50_000n) };
  };

  const withdrawalsOf = async (note: Note) => {
    const pool = chain.facilitator.privacyPool;
    return (await pool.queryFilter(pool.filters.Withdrawn())).filter(
      (event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier),
    );
  };

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    schema = await createTestSchema();
    // A stale time below the proving time: only the holder's heartbeat keeps a live lease from being taken over
    // (without it these tests made 9 proofs for one note, and the 50 requests none that settled).
    env = relayerEnv(chain, indexer, { RELAYER_DATABASE_URL: urlWithSchema(schema), RELAYER_LEASE_STALE_MS: "1000", NODE_ENV: "test" });
    relayers.push(...(await Promise.all([startRelayerProcess(env), startRelayerProcess(env)])));
  });
  after(async function () {
    await Promise.all(relayers.map((relayer) => relayer.stop()));
    await indexer?.stop();
    await chain?.close();
    await schema?.drop();
  });

  it("withdraws once for 50 concurrent identical settle-x402 requests split between them; the others replay it", async function () {
    const { note, body } = await freshRequest(300);

    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => relayers[i % 2]!.post(SETTLE_X402, body)));

    const spends = await withdrawalsOf(note);
    expect(spends).to.have.length(1);
    for (const answer of answers) {
      expect(answer).to.not.equal("lost");
      const { status, body: result } = answer as { status: number; body: Record<string, unknown> };
      // Every answer is the one settlement, or says it is still in progress: never a second payment.
      if (status === 200) {
        expect(result.fundingTxHash).to.equal(spends[0]!.transactionHash);
      } else {
        expect(status, JSON.stringify(result)).to.equal(409);
        expect(result).to.deep.include({ settled: false, code: "SETTLEMENT_IN_PROGRESS" });
      }
    }
    const settled = answers.filter((answer) => answer !== "lost" && answer.status === 200) as { body: Record<string, unknown> }[];
    expect(new Set(settled.map((answer) => answer.body.xPayment)).size).to.equal(1);
    expect(settled.filter((answer) => answer.body.replayed === false)).to.have.length(1);
  });

  it("takes over a lease whose holder died, once, for 40 concurrent identical retries across both; one proof, one withdrawal", async function () {
    const { note, body } = await freshRequest(301);
    // A third relayer takes the lease and dies before proving: the lease stays reserved, with no one to finish it.
    const dying = await startRelayerProcess({ ...env, RELAYER_CRASH_AT: "after-reserve" });
    expect(await dying.post(SETTLE_X402, body)).to.equal("lost");
    expect(await dying.exited).to.equal("SIGKILL");
    const linesBefore = relayers.map((relayer) => relayer.lines.length);

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => relayers[i % 2]!.post(SETTLE_X402, body)));

    const spends = await withdrawalsOf(note);
    expect(spends).to.have.length(1);
    const spendTx = spends[0]!.transactionHash;
    const statuses = new Map<number, number>();
    for (const answer of answers) {
      expect(answer).to.not.equal("lost");
      const { status, body: result } = answer as { status: number; body: Record<string, unknown> };
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 200) {
        expect(result).to.deep.include({ settled: true, fundingTxHash: spendTx });
      } else if (status === 202) {
        expect(result).to.deep.include({ code: "SETTLEMENT_UNCERTAIN", fundingTxHash: spendTx });
      } else {
        expect(status, JSON.stringify(result)).to.equal(409);
        expect(result).to.deep.include({ settled: false, code: "SETTLEMENT_IN_PROGRESS" });
      }
    }
    expect(statuses.get(200), `answers by status: ${JSON.stringify([...statuses])}`).to.be.above(0);

    const store = await PgRelayerStore.open(schema);
    try {
      expect(await store.getLease(nullifierHashOf(note.nullifier))).to.deep.include({ state: "settled", fundingTxHash: spendTx });
    } finally {
      await store.close();
    }
    const proofs = relayers
      .flatMap((relayer, i) => relayer.lines.slice(linesBefore[i]))
      .filter((line) => line.includes(PROVING)).length;
    expect(proofs, "withdrawals taken under a lease (each makes one proof)").to.be.within(1, 2);
  });
});

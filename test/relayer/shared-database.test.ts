import { expect } from "chai";
import { Wallet } from "ethers";
import { noteToWire } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf } from "../../sdk/index.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { deposit } from "../indexer/helpers/pool-actions.js";
import { relayerEnv, startRelayerProcess, type RelayerProcess } from "./helpers/relayer-process.js";

/** A connection string whose sessions use `schema`, so the relayers share the test's schema and nothing else. */
function urlWithSchema({ connectionString, schema }: TestSchema): string {
  const url = new URL(connectionString);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return url.toString();
}

describe("two relayer processes on one PostgreSQL", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let schema: TestSchema;
  const relayers: RelayerProcess[] = [];

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    schema = await createTestSchema();
    const env = relayerEnv(chain, indexer, { RELAYER_DATABASE_URL: urlWithSchema(schema) });
    relayers.push(...(await Promise.all([startRelayerProcess(env), startRelayerProcess(env)])));
  });
  after(async function () {
    await Promise.all(relayers.map((relayer) => relayer.stop()));
    await indexer?.stop();
    await chain?.close();
    await schema?.drop();
  });

  it("withdraws once for 50 concurrent identical settle-x402 requests split between them; the others replay it", async function () {
    const note = await deposit(chain, chain.depositors.bob, 300, 1_000_000n);
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    const body = {
      accepts: {
        scheme: "exact",
        network: "eip155:31337",
        asset: chain.facilitator.addressBook.usdc,
        payTo: Wallet.createRandom().address,
        amount: "50000",
        maxTimeoutSeconds: 600,
        extra: { name: "USDC", version: "2" },
      },
      serviceDeposit: noteToWire(note),
      acceptNotPrivate: true,
    };

    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => relayers[i % 2]!.post("/api/facilitator/settle-x402", body)));

    const pool = chain.facilitator.privacyPool;
    const spends = (await pool.queryFilter(pool.filters.Withdrawn())).filter(
      (event) => event.args.spentNullifierHash === nullifierHashOf(note.nullifier),
    );
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
});

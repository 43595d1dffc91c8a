import { expect } from "chai";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { readAddressBook, writeAddressBook } from "../../lib/address-book.js";
import { freePort } from "../../scripts/demo/processes.js";
import { spawnService } from "../helpers/service-process.js";
import { startTcpProxy } from "../helpers/tcp-proxy.js";
import { buildIndexerConfig, startIndexer, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { relayerEnv, startRelayerProcess } from "../relayer/helpers/relayer-process.js";

/** The relayer refuses to start against an indexer it cannot use, and says which variable to fix. */
describe("relayer start: the indexer check", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;

  before(async function () {
    chain = await startLocalChain();
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
  });
  after(async function () {
    await indexer.stop();
    await chain.close();
  });

  /** Runs relayer/main.ts to its exit; resolves with the exit code and everything it wrote. */
  async function refusedStart(overrides: Record<string, string>) {
    const relayer = spawnService("relayer/main.ts", [], relayerEnv(chain, indexer, overrides));
    const code = await relayer.exited;
    return { code, output: relayer.lines.join("\n") };
  }

  it("refuses a wrong INDEXER_TOKEN, naming the variable", async function () {
    const { code, output } = await refusedStart({ INDEXER_TOKEN: "not-the-indexer-token" });
    expect(code, output).to.equal(1);
    expect(output).to.contain(`Invalid server config: INDEXER_TOKEN is not accepted by the indexer at ${indexer.url} (HTTP 401 UNAUTHORIZED`);
    expect(output).to.not.contain("not-the-indexer-token");
  });

  it("refuses an INDEXER_URL where no indexer answers", async function () {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const { code, output } = await refusedStart({ INDEXER_URL: nobody });
    expect(code, output).to.equal(1);
    expect(output).to.contain(`Invalid server config: INDEXER_URL ${nobody} does not answer the indexer API`);
    expect(output).to.contain("ECONNREFUSED");
  });

  it("refuses an address book of another deployment than the indexer's", async function () {
    const book = (await readAddressBook(31337, path.dirname(chain.addressBookFile)))!;
    const dir = await mkdtemp(path.join(tmpdir(), "other-book-"));
    const other = await writeAddressBook({ ...book, privacyPool: book.entrypoint }, dir);
    const { code, output } = await refusedStart({ RELAYER_ADDRESS_BOOK: other });
    expect(code, output).to.equal(1);
    expect(output).to.contain("Invalid server config: RELAYER_ADDRESS_BOOK and the indexer at INDEXER_URL follow different deployments (privacyPool:");
  });

  it("reports the indexer's health live in supported", async function () {
    const proxy = await startTcpProxy(indexer.url);
    const relayer = await startRelayerProcess(relayerEnv(chain, indexer, { INDEXER_URL: proxy.url }));
    try {
      const supported = async () => (await (await fetch(`${relayer.url}/api/facilitator/supported`)).json()) as {
        pilotReady: boolean;
        blockingReasons: { code: string; blocks: string[] }[];
        privacy: { indexer: { reachable: boolean; synced: boolean; error: string | null } };
      };
      const up = await supported();
      expect(up.pilotReady).to.equal(true);
      expect(up.privacy.indexer).to.deep.include({ reachable: true, synced: true, error: null });

      await proxy.cut();
      const down = await supported();
      expect(down.pilotReady).to.equal(false);
      expect(down.privacy.indexer).to.deep.include({ reachable: false, synced: false });
      expect(down.privacy.indexer.error).to.contain("ECONNREFUSED");
      expect(down.blockingReasons[0]).to.deep.include({ code: "INDEXER_UNAVAILABLE", blocks: ["pilot", "customer"] });
      expect((await relayer.logLine("indexer status unavailable")).cause).to.contain("ECONNREFUSED");
    } finally {
      await relayer.stop();
    }
  });
});

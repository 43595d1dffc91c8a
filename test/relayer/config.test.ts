import { expect } from "chai";
import { ConfigError } from "../../lib/env-config.js";
import { loadRelayerConfig } from "../../relayer/config.js";

const VALID = {
  RELAYER_RPC_URL: "http://127.0.0.1:8545",
  RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
  INDEXER_URL: "http://127.0.0.1:8788",
  INDEXER_TOKEN: "a-long-enough-indexer-token",
  TREASURY_ADDRESS: "0x000000000000000000000000000000000000bEEF",
  PAYER_KEY_SECRET: `0x${"22".repeat(32)}`,
};

describe("relayer config", function () {
  it("refuses to start without the chain RPC, relay key, indexer token, and names each missing key", function () {
    let error: unknown;
    try {
      loadRelayerConfig({});
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as ConfigError).problems).to.include.members([
      "Missing server config: RELAYER_RPC_URL",
      "Missing server config: RELAYER_PRIVATE_KEY",
      "Missing server config: INDEXER_URL",
      "Missing server config: INDEXER_TOKEN",
      "Missing server config: TREASURY_ADDRESS",
      "Missing server config: PAYER_KEY_SECRET",
    ]);
  });

  it("names an invalid key with what is wrong, without echoing its value", function () {
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_PRIVATE_KEY: "0x1234" }))
      .to.throw(ConfigError, /Invalid server config: RELAYER_PRIVATE_KEY must be a 0x-prefixed 32-byte private key/)
      .and.satisfy((error: Error) => !error.message.includes("0x1234"));
  });

  it("applies the pilot defaults: gate off, standard tier", function () {
    const config = loadRelayerConfig(VALID);
    expect(config).to.deep.include({ accessFeeEnforced: false, tier: "standard", port: 8787 });
  });

  it("uses PostgreSQL only when RELAYER_DATABASE_URL is a postgres URL, the SQLite file otherwise", function () {
    const embedded = loadRelayerConfig(VALID);
    expect([embedded.dbPath, embedded.databaseUrl]).to.deep.equal(["data/relayer.sqlite", undefined]);
    const url = "postgres://relayer:secret@db.internal:5432/relayer";
    expect(loadRelayerConfig({ ...VALID, RELAYER_DATABASE_URL: url }).databaseUrl).to.equal(url);
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_DATABASE_URL: "/var/lib/relayer.sqlite" }))
      .to.throw(ConfigError, /Invalid server config: RELAYER_DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/)
      .and.satisfy((error: Error) => !error.message.includes("/var/lib"));
  });

  it("reads the request limits, RPC time-out and shutdown grace, refusing zero and values setTimeout cannot wait", function () {
    expect(loadRelayerConfig(VALID)).to.deep.include({ rateLimitGlobalPerSecond: 100, rateLimitPerNotePerMinute: 60, rpcTimeoutMs: 15_000, shutdownGraceMs: 30_000 });
    const set = loadRelayerConfig({
      ...VALID,
      RELAYER_RATE_LIMIT_GLOBAL_PER_SECOND: "5",
      RELAYER_RATE_LIMIT_PER_NOTE_PER_MINUTE: "7",
      RELAYER_RPC_TIMEOUT_MS: "2500",
      RELAYER_SHUTDOWN_GRACE_MS: "1000",
    });
    expect(set).to.deep.include({ rateLimitGlobalPerSecond: 5, rateLimitPerNotePerMinute: 7, rpcTimeoutMs: 2500, shutdownGraceMs: 1000 });
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_RPC_TIMEOUT_MS: "0" })).to.throw(ConfigError, /RELAYER_RPC_TIMEOUT_MS must be a positive integer/);
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_SHUTDOWN_GRACE_MS: String(2 ** 31) })).to.throw(ConfigError, /RELAYER_SHUTDOWN_GRACE_MS/);
  });
});

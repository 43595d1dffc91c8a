import { expect } from "chai";
import { loadIndexerConfig } from "../../indexer/config.js";
import { ConfigError } from "../../lib/env-config.js";

const POSTMAN_KEY = `0x${"11".repeat(32)}`;

/** A complete indexer environment, with any variable overridden or (as undefined) removed. */
function buildEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    INDEXER_RPC_URL: "http://127.0.0.1:8545",
    INDEXER_TOKEN: "a-long-enough-test-token",
    ASP_POSTMAN_PRIVATE_KEY: POSTMAN_KEY,
    ...overrides,
  };
}

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadIndexerConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("indexer config", function () {
  it("refuses to start without an RPC URL, a token or a postman key, naming each variable", function () {
    expect(problemsOf({})).to.have.members([
      "Missing server config: INDEXER_RPC_URL",
      "Missing server config: INDEXER_TOKEN",
      "Missing server config: ASP_POSTMAN_PRIVATE_KEY",
    ]);
    expect(problemsOf(buildEnv({ INDEXER_TOKEN: "" }))).to.deep.equal(["Missing server config: INDEXER_TOKEN"]);
  });

  it("needs no postman key when the curator does not publish roots", function () {
    const config = loadIndexerConfig(buildEnv({ ASP_POSTMAN_PRIVATE_KEY: undefined, ASP_PUBLISH_ROOTS: "false" }));
    expect(config.publishRoots).to.equal(false);
  });

  it("names the variable of an invalid value", function () {
    const problems = problemsOf(
      buildEnv({ INDEXER_TOKEN: "short", INDEXER_PORT: "http", ASP_OPERATOR_ADDRESSES: "0x1234" }),
    );
    expect(problems).to.have.length(3);
    expect(problems[0]).to.match(/^Invalid server config: INDEXER_TOKEN must be at least 16 characters/);
    expect(problems.join("\n")).to.contain("INDEXER_PORT").and.to.contain("ASP_OPERATOR_ADDRESSES");
  });

  it("fills defaults and parses lists and amounts", function () {
    const config = loadIndexerConfig(
      buildEnv({ ASP_OPERATOR_ADDRESSES: " 0x70997970c51812dc3a010c7d01b50e0d17dc79c8 ,", INDEXER_CONFIRMATIONS: "3" }),
    );
    expect(config).to.deep.include({
      port: 8788,
      host: "127.0.0.1",
      confirmations: 3,
      maxBlockRange: 2_000,
      minimumDeposit: 1_000_000n,
      operatorAddresses: ["0x70997970C51812dc3A010C7d01b50e0d17dc79C8"],
      sanctionsList: "config/screening/sanctions.txt",
    });
  });

  it("uses PostgreSQL only when INDEXER_DATABASE_URL is a postgres URL, the SQLite file otherwise", function () {
    const embedded = loadIndexerConfig(buildEnv());
    expect([embedded.dbPath, embedded.databaseUrl]).to.deep.equal(["data/indexer.sqlite", undefined]);
    const url = "postgresql://indexer:secret@db.internal:5432/indexer";
    expect(loadIndexerConfig(buildEnv({ INDEXER_DATABASE_URL: url })).databaseUrl).to.equal(url);

    const problems = problemsOf(buildEnv({ INDEXER_DATABASE_URL: "mysql://indexer:secret@db.internal/indexer" }));
    expect(problems).to.deep.equal([
      "Invalid server config: INDEXER_DATABASE_URL must be a postgres:// or postgresql:// URL",
    ]);
  });
});

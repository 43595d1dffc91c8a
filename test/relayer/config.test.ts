import { expect } from "chai";
import { ConfigError } from "../../lib/env-config.js";
import { loadRelayerConfig } from "../../relayer/config.js";

const VALID = {
  RELAYER_RPC_URL: "http://127.0.0.1:8545",
  RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
  INDEXER_URL: "http://127.0.0.1:8788",
  INDEXER_TOKEN: "a-long-enough-indexer-token",
  TREASURY_ADDRESS: "0x000000000000000000000000000000000000bEEF",
  PAYER_KEY_SECRET: "0x9c4e1b7a2f6d83c05e19a4b7d2c6f8e31a5b9d0c7e4f2a6b8d1c3e5f7a9b0c2d",
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

  it("refuses a weak PAYER_KEY_SECRET, says how to generate one, and never echoes it", function () {
    const weak = {
      "all zeros": `0x${"00".repeat(32)}`,
      "one repeated byte": `0x${"5e".repeat(32)}`,
      "a short repeated pattern": `0x${"deadbeef".repeat(8)}`,
      "a counting sequence": `0x${Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0")).join("")}`,
    };
    for (const [what, secret] of Object.entries(weak)) {
      expect(() => loadRelayerConfig({ ...VALID, PAYER_KEY_SECRET: secret }), what)
        .to.throw(ConfigError, /Invalid server config: PAYER_KEY_SECRET is weak: .*randomBytes\(32\).*openssl rand -hex 32/)
        .and.satisfy((error: Error) => !error.message.includes(secret.slice(2, 18)));
    }
    expect(() => loadRelayerConfig({ ...VALID, PAYER_KEY_SECRET: `0x${"ab".repeat(16)}` }))
      .to.throw(ConfigError, /PAYER_KEY_SECRET must be a 0x-prefixed 32-byte secret; generate one with/);
    expect(loadRelayerConfig(VALID).payerKeySecret).to.equal(VALID.PAYER_KEY_SECRET);
  });

  it("reads the USDC/ETH price of the fee floor, 3000 unless set, refusing zero and more than six decimals", function () {
    expect(loadRelayerConfig(VALID).usdcPerEth, "unset: the chain's default (relayer/pricing/pricing.ts)").to.equal(undefined);
    expect(loadRelayerConfig({ ...VALID, RELAYER_USDC_PER_ETH: "2512.25" }).usdcPerEth).to.equal(2_512_250_000n);
    expect(loadRelayerConfig({ ...VALID, RELAYER_USDC_PER_ETH: "0.5" }).usdcPerEth).to.equal(500_000n);
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_USDC_PER_ETH: "0" })).to.throw(ConfigError, /RELAYER_USDC_PER_ETH must be above zero/);
    for (const bad of ["1.0000001", "-5", "3e3", "abc"]) {
      expect(() => loadRelayerConfig({ ...VALID, RELAYER_USDC_PER_ETH: bad }), bad).to.throw(ConfigError, /RELAYER_USDC_PER_ETH must be a decimal USDC price/);
    }
  });

  it("bounds the seller windows settle-x402 pays: 20 s to 1 hour by default, the minimum never above the maximum", function () {
    expect(loadRelayerConfig(VALID)).to.deep.include({ x402MinWindowSeconds: 20, x402MaxWindowSeconds: 3600 });
    const set = { ...VALID, RELAYER_X402_MIN_WINDOW_SECONDS: "30", RELAYER_X402_MAX_WINDOW_SECONDS: "600" };
    expect(loadRelayerConfig(set)).to.deep.include({ x402MinWindowSeconds: 30, x402MaxWindowSeconds: 600 });
    expect(() => loadRelayerConfig({ ...set, RELAYER_X402_MIN_WINDOW_SECONDS: "601" })).to.throw(
      ConfigError,
      /RELAYER_X402_MIN_WINDOW_SECONDS must not exceed RELAYER_X402_MAX_WINDOW_SECONDS/,
    );
  });

  it("settles plain seller payments from a key of their own, never the relaying key: none unless set", function () {
    expect(loadRelayerConfig(VALID).sellerEip3009PrivateKey).to.equal(undefined);
    const own = `0x${"22".repeat(32)}`;
    expect(loadRelayerConfig({ ...VALID, RELAYER_SELLER_EIP3009_KEY: own }).sellerEip3009PrivateKey).to.equal(own);
    expect(() => loadRelayerConfig({ ...VALID, RELAYER_SELLER_EIP3009_KEY: VALID.RELAYER_PRIVATE_KEY.toUpperCase().replace("0X", "0x") }))
      .to.throw(ConfigError, /RELAYER_SELLER_EIP3009_KEY must not be RELAYER_PRIVATE_KEY/)
      .and.satisfy((error: Error) => !error.message.includes("1111"));
  });
});

import { createRequire } from "node:module";
import hardhatToolboxMochaEthers from "@nomicfoundation/hardhat-toolbox-mocha-ethers";
import { configVariable, defineConfig } from "hardhat/config";

// Solidity compiles offline: the compiler is the solcjs build shipped by the `solc` npm package, whose version
// is pinned in package.json to the one named here.
const SOLC_VERSION = "0.8.28";
const solcJsPath = createRequire(import.meta.url).resolve("solc/soljson.js");

export default defineConfig({
  plugins: [hardhatToolboxMochaEthers],
  solidity: {
    version: SOLC_VERSION,
    path: solcJsPath,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "cancun",
    },
  },
  paths: {
    tests: { mocha: "test" },
  },
  test: {
    mocha: {
      timeout: 600_000,
      rootHooks: {
        // Proofs leave snarkjs worker threads running; without this the test process never exits.
        async afterAll() {
          const { releaseProverThreads } = await import("./sdk/circuit/prover.js");
          await releaseProverThreads();
        },
      },
    },
  },
  networks: {
    hardhatMainnet: { type: "edr-simulated", chainType: "l1" },
    localhost: { type: "http", url: "http://127.0.0.1:8545" },
    baseSepolia: {
      type: "http",
      chainType: "op",
      url: configVariable("BASE_SEPOLIA_RPC_URL"),
      accounts: [configVariable("DEPLOYER_PRIVATE_KEY")],
    },
  },
});

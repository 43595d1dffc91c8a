import { createRequire } from "node:module";
import hardhatToolboxMochaEthers from "@nomicfoundation/hardhat-toolbox-mocha-ethers";
import { configVariable, defineConfig } from "hardhat/config";

// Solidity compiles offline: the compiler is the solcjs build shipped by the `solc` npm package, whose version
// is pinned in package.json to the one named here.
const SOLC_VERSION = "0.8.28";
const solcJsPath = createRequire(import.meta.url).resolve("solc/soljson.js");

const SOLC_SETTINGS = { optimizer: { enabled: true, runs: 200 }, evmVersion: "cancun" };
// The pool and the generated Poseidon it links (contracts/lib/poseidon) are tuned for runtime gas: at fewer runs
// the optimizer moves Poseidon's round constants into a data section that each use copies back into memory.
// Poseidon2T3 is internal, compiled with whatever includes it: its harness is tuned as the pool would be.
const TUNED_FOR_RUNTIME = [
  "contracts/PrivacyPool.sol",
  "contracts/lib/poseidon/PoseidonT3.sol",
  "contracts/lib/poseidon/PoseidonT4.sol",
  "contracts/test/Poseidon2T3Harness.sol",
];

export default defineConfig({
  plugins: [hardhatToolboxMochaEthers],
  solidity: {
    compilers: [{ version: SOLC_VERSION, path: solcJsPath, settings: SOLC_SETTINGS }],
    overrides: Object.fromEntries(
      TUNED_FOR_RUNTIME.map((source) => [
        source,
        { version: SOLC_VERSION, path: solcJsPath, settings: { ...SOLC_SETTINGS, optimizer: { enabled: true, runs: 1_000_000 } } },
      ]),
    ),
    // The pool links its Poseidon libraries (inlined, they would exceed the contract size limit): PoseidonT2 from
    // this npm package, PoseidonT3 and PoseidonT4 generated under contracts/lib/poseidon. Deploying needs the
    // artifacts.
    npmFilesToBuild: ["poseidon-solidity/PoseidonT2.sol"],
  },
  paths: {
    tests: { mocha: "test" },
  },
  test: {
    mocha: {
      timeout: 600_000,
      rootHooks: {
        // Proofs leave snarkjs worker threads and native prover processes running; without this the test process
        // never exits.
        async afterAll() {
          const { releaseProverThreads } = await import("./sdk/circuit/prover.js");
          const { closeNativeProvers } = await import("./sdk/prover/native-process.js");
          await Promise.all([releaseProverThreads(), closeNativeProvers()]);
        },
      },
    },
  },
  // The OP Stack upgrades of Base Sepolia and Base by activation time (the superchain registry's): a fork (`npm run
  // chain:fork`) executes calls at the forked block with them, and refuses to ("no known hardfork for execution on
  // historical block") for a chain it has no history of, which failed `npm run deploy` on the fork.
  chainDescriptors: {
    8453: {
      name: "Base",
      chainType: "op",
      hardforkHistory: {
        bedrock: { blockNumber: 0 },
        regolith: { timestamp: 0 },
        canyon: { timestamp: 1_704_992_401 },
        ecotone: { timestamp: 1_710_374_401 },
        fjord: { timestamp: 1_720_627_201 },
        granite: { timestamp: 1_726_070_401 },
        holocene: { timestamp: 1_736_445_601 },
        isthmus: { timestamp: 1_746_806_401 },
      },
    },
    84532: {
      name: "Base Sepolia",
      chainType: "op",
      hardforkHistory: {
        bedrock: { blockNumber: 0 },
        regolith: { timestamp: 0 },
        canyon: { timestamp: 1_699_981_200 },
        ecotone: { timestamp: 1_708_534_800 },
        fjord: { timestamp: 1_716_998_400 },
        granite: { timestamp: 1_723_478_400 },
        holocene: { timestamp: 1_732_633_200 },
        isthmus: { timestamp: 1_744_905_600 },
      },
    },
  },
  networks: {
    hardhatMainnet: { type: "edr-simulated", chainType: "l1" },
    // The deploy script and the demo connect through this one with their RPC_URL (and DEPLOYER_PRIVATE_KEY) as an
    // override, so any host, port and chain id can be deployed to without editing this file.
    localhost: { type: "http", url: "http://127.0.0.1:8545" },
    // A local fork of Base or Base Sepolia, served by `hardhat node --network baseFork` and deployed to through
    // `localhost`. It keeps the local chain id 31337; the deploy script finds Circle's USDC by its code.
    baseFork: {
      type: "edr-simulated",
      chainType: "op",
      forking: { url: configVariable("FORK_URL") },
    },
  },
});

// Writes sdk/contracts/abis.ts from this checkout's Hardhat artifacts: `npm run sdk:abis` after a contract change
// the SDK uses (test/sdk/contract-abis.test.ts says when).
import { writeFile } from "node:fs/promises";
import path from "node:path";
import hre from "hardhat";
import { CONTRACT_ABIS_PATH, renderContractAbis } from "./contract-abis.js";

await writeFile(CONTRACT_ABIS_PATH, await renderContractAbis(hre.artifacts));
console.log(`wrote ${path.relative(process.cwd(), CONTRACT_ABIS_PATH)}`);

import { expect } from "chai";
import { readFile } from "node:fs/promises";
import hre from "hardhat";
import { CONTRACT_ABIS_PATH, renderContractAbis } from "../../scripts/sdk/contract-abis.js";
import { rejectionOf } from "./agent/helpers/rejection.js";

// The SDK decodes events and calls the contracts with ABIs of its own (it cannot import the repository's TypeChain
// output); they are generated, and this test keeps them what the contracts compile to.
describe("the agent SDK's contract ABIs (sdk/contracts/abis.ts)", function () {
  it("are what the contracts compile to today", async function () {
    expect(await readFile(CONTRACT_ABIS_PATH, "utf8"), "stale: run `npm run sdk:abis`").to.equal(await renderContractAbis(hre.artifacts));
  });

  it("refuse to generate an item the contract does not have", async function () {
    const renamed = {
      readArtifact: async (name: string) => {
        const artifact = await hre.artifacts.readArtifact(name);
        return { ...artifact, abi: artifact.abi.map((item) => ("name" in item && item.name === "Withdrawn" ? { ...item, name: "Withdrawal" } : item)) };
      },
    };
    expect((await rejectionOf(renderContractAbis(renamed as Parameters<typeof renderContractAbis>[0]))).message).to.contain("IPrivacyPool has 0 ABI items named Withdrawn");
  });
});

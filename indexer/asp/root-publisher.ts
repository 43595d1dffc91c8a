import { createHash } from "node:crypto";
import type { IEntrypoint } from "../../types/ethers-contracts/index.js";

/**
 * The content id published with an ASP root: SHA-256 of the approved labels in tree order, one decimal label per
 * line. Whoever holds the label list can rebuild the tree and check both the root and this id.
 */
export function aspContentId(labels: readonly bigint[]): string {
  return `sha256:${createHash("sha256").update(labels.map(String).join("\n")).digest("hex")}`;
}

/** Publishes ASP roots with the postman key (POSTMAN_ROLE on the entrypoint). */
export class RootPublisher {
  /** @param entrypoint The entrypoint, connected to the postman's signer. */
  constructor(private readonly entrypoint: Pick<IEntrypoint, "updateRoot">) {}

  /** Sends Entrypoint.updateRoot and waits for it to be mined (ethers throws when it reverts); returns its hash. */
  async publish(root: bigint, labels: readonly bigint[]): Promise<string> {
    const tx = await this.entrypoint.updateRoot(root, aspContentId(labels));
    await tx.wait();
    return tx.hash;
  }
}

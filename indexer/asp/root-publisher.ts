import { createHash } from "node:crypto";
import type { IEntrypoint } from "../../types/ethers-contracts/index.js";

/**
 * The content id published with an ASP root: SHA-256 of the approved labels in tree order, one decimal label per
 * line. Whoever holds the label list can rebuild the tree and check both the root and this id.
 */
export function aspContentId(labels: readonly bigint[]): string {
  return `sha256:${createHash("sha256").update(labels.map(String).join("\n")).digest("hex")}`;
}

/** How many of `labels`, from the first, have the content id `cid`; undefined when no prefix does. */
export function prefixWithContentId(labels: readonly bigint[], cid: string): number | undefined {
  const hash = createHash("sha256");
  for (let size = 1; size <= labels.length; size++) {
    hash.update(`${size === 1 ? "" : "\n"}${labels[size - 1]}`);
    if (`sha256:${hash.copy().digest("hex")}` === cid) return size;
  }
  return undefined;
}

/** An ASP tree to publish. */
export interface AspPublication {
  root: bigint;
  depth: number;
  labels: readonly bigint[];
  /**
   * Present when a label left the set since the last revocation: the root then revokes every earlier root but
   * these (whose trees hold no label that left).
   */
  keptRoots?: readonly bigint[];
}

/** Publishes ASP roots with the postman key (POSTMAN_ROLE on the entrypoint). */
export class RootPublisher {
  /**
   * @param entrypoint The entrypoint, connected to the postman's signer.
   * @param funds Refuses (throws) before sending a publication the postman could not pay.
   */
  constructor(
    private readonly entrypoint: Pick<IEntrypoint, "updateRoot" | "revokeAndUpdateRoot">,
    private readonly funds?: { assertCanPublish(): Promise<void> },
  ) {}

  /**
   * Sends Entrypoint.updateRoot, or revokeAndUpdateRoot when the publication revokes, and waits for it to be
   * mined (ethers throws when it reverts); returns its hash.
   */
  async publish({ root, depth, labels, keptRoots }: AspPublication): Promise<string> {
    await this.funds?.assertCanPublish();
    const cid = aspContentId(labels);
    const tx = keptRoots === undefined
      ? await this.entrypoint.updateRoot(root, depth, cid)
      : await this.entrypoint.revokeAndUpdateRoot(root, depth, cid, [...keptRoots]);
    await tx.wait();
    return tx.hash;
  }
}

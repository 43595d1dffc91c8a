import type { Logger } from "pino";
import type { MerkleWitness } from "../../sdk/index.js";
import { depositorReach, DepositorReach, type AnonymitySetPolicy } from "../anonymity-set.js";
import type { ChainEvents } from "../chain/events.js";
import { IndexerError } from "../errors.js";
import type { AspDecision, AspVerdict, DepositRecord, IndexerStore } from "../store/indexer-store.js";
import { SavedTree } from "../saved-tree.js";
import { IndexedTree } from "../trees.js";
import { prefixWithContentId, type RootPublisher } from "./root-publisher.js";
import { sameVerdict, screenDeposit } from "./screen-deposit.js";
import type { ScreeningLists } from "./screening-lists.js";

export interface AspStatus {
  /** Root of the tree of approved labels, 0 while none is approved. */
  aspRoot: bigint;
  /** Whether that root is on chain (the entrypoint has it). */
  aspRootMatches: boolean;
  aspLabelCount: number;
  anonymitySet: number;
}

export interface AspCuratorDeps {
  store: IndexerStore;
  lists: ScreeningLists;
  chain: { latestAspRoot(): Promise<bigint>; isKnownAspRoot(root: bigint): Promise<boolean> };
  /** Null for a read-only curator that serves paths under roots someone else publishes. */
  publisher: RootPublisher | null;
  policy: AnonymitySetPolicy;
  logger: Logger;
}

type Deposit = Pick<DepositRecord, "label" | "depositor" | "value">;

/** An on-chain ASP root whose tree is the first `size` labels of the current tree. */
interface PrefixRoot {
  root: bigint;
  size: number;
}

/**
 * The ASP curator: screens every deposit's depositor, keeps the tree of approved labels (in deposit order),
 * publishes its root when it changes and records every decision in the audit trail. A new approval appends to the
 * tree; an exclusion after a list change rebuilds it (the circuit reads a zero sibling as "no sibling", so a
 * label cannot be removed by zeroing its leaf).
 *
 * Two trees are kept: `current`, what the curator approves now, and `onChain`, the newest tree whose root the
 * entrypoint has. Paths come from `onChain`, so a proof built from one verifies on chain even while a new root is
 * on its way; `current` is copied before it changes while the two are the same tree.
 *
 * Revocation: when a label leaves the set, the next root is published revoking (Entrypoint.revokeAndUpdateRoot),
 * so no earlier root that holds the label is accepted by any relay from then on. It keeps the on-chain roots
 * known to be prefixes of the tree that end before the first label that left (their trees hold none of them).
 * When the curator does not know what the latest on-chain root holds (after a start or a reorg) and its content
 * id is not that of a prefix of the tree, it may hold a label excluded since: the next root revokes it.
 *
 * Refunds (Entrypoint.refundAuthorization, returnTab) are not deposits: a refund note carries the label of the note
 * whose relay made the payment, so the decision on that label reaches it, and it is never screened or counted.
 */
export class AspCurator {
  private deposits: Deposit[] = [];
  private decisions = new Map<bigint, AspVerdict>();
  private ragequits = new Set<bigint>();
  private current = IndexedTree.of([]);
  private onChain: IndexedTree | null = null;
  private rescreenPending = false;
  /** Each counted depositor's largest deposit under the on-chain ASP root, made again whenever it may change (recount). */
  private reach = new DepositorReach([]);
  /** On-chain roots that are prefixes of `current`, oldest first; emptied by every rebuild. */
  private prefixRoots: PrefixRoot[] = [];
  /** Set when a label left the set: the roots the next (revoking) publication keeps. */
  private revocation: { keptRoots: bigint[] } | null = null;
  private readonly savedTree: SavedTree;

  constructor(private readonly deps: AspCuratorDeps) {
    this.savedTree = new SavedTree(deps.store, "asp");
  }

  /** Loads deposits and decisions from the store, screens them again against the lists in force, builds the tree. */
  async load(): Promise<void> {
    const { store } = this.deps;
    const [deposits, ragequits, latestRoot] = await Promise.all([store.screenedDeposits(), store.ragequitLabels(), store.latestAspRoot()]);
    const inForce = new Map<bigint, AspVerdict>();
    for (const { label, verdict } of deposits) if (verdict !== null) inForce.set(label, verdict);
    const changed = this.rescreen(deposits, inForce);
    await this.record(changed);
    for (const decision of changed) inForce.set(decision.label, decision);
    const tree = await this.savedTree.build(approvedLabels(deposits, inForce));
    // Swapped in at once: the API keeps answering from the previous state while the tree is built.
    this.deposits = deposits;
    this.decisions = inForce;
    this.ragequits = new Set(ragequits);
    this.current = tree;
    this.onChain = latestRoot !== null && latestRoot.root === tree.root ? tree : null;
    // The root itself says the on-chain tree is the whole tree; else its content id may say which prefix it is.
    const onChainSize = latestRoot === null ? undefined : this.onChain === tree ? tree.size : prefixWithContentId(tree.leaves, latestRoot.cid);
    this.prefixRoots = latestRoot === null || onChainSize === undefined ? [] : [{ root: latestRoot.root, size: onChainSize }];
    this.revocation = null;
    this.recount();
  }

  /** Decisions on the deposits of a sync batch, to be stored with it: each depositor screened. */
  screen(events: Pick<ChainEvents, "deposits">): AspDecision[] {
    const now = new Date();
    return events.deposits.map((deposit) => screenDeposit(deposit, this.deps.lists, now));
  }

  /** Takes in a batch the store has committed, with the decisions `screen` made on its deposits. */
  applyBatch(events: ChainEvents, decisions: readonly AspDecision[]): void {
    for (const decision of decisions) this.decisions.set(decision.label, decision);
    this.deposits.push(...events.deposits);
    for (const spent of events.spentNullifiers) if (spent.label !== null) this.ragequits.add(spent.label);
    const approved = approvedLabels(events.deposits, this.decisions);
    if (approved.length > 0) this.mutableTree().append(approved);
    if (events.aspRoots.at(-1)?.root === this.current.root) this.onChain = this.current;
    this.recount();
  }

  /** Saves the complete chunks of the current tree the store does not hold yet (after a batch). */
  async saveTree(): Promise<void> {
    await this.savedTree.save(this.current);
  }

  /** Re-reads the screening lists when their files changed, and screens every deposit again. */
  async reloadLists(): Promise<void> {
    if (await this.deps.lists.reloadIfChanged()) this.rescreenPending = true;
    if (!this.rescreenPending) return;
    const changed = this.rescreen(this.deposits, this.decisions);
    if (changed.length > 0) {
      // Recorded before applied: if the store fails, the next call screens again and nothing is lost.
      await this.record(changed);
      const left = changed
        .filter((decision) => !decision.approved)
        .map((decision) => this.current.indexOf(decision.label))
        .filter((position) => position !== undefined);
      if (left.length > 0) this.revokeFrom(left.reduce((first, position) => Math.min(first, position)));
      for (const decision of changed) this.decisions.set(decision.label, decision);
      this.current = await this.savedTree.build(approvedLabels(this.deposits, this.decisions));
      this.prefixRoots = [];
      this.recount();
    }
    this.rescreenPending = false;
  }

  /**
   * Makes the current root the on-chain one: publishes it with the postman key unless the entrypoint already has
   * it, revoking the earlier roots when a label left the set. While no label is approved nothing is published
   * (the entrypoint refuses a zero root), unless the last approved label left: then the zero root revokes.
   */
  async publish(): Promise<void> {
    const tree = this.current;
    if (tree === this.onChain) return;
    if (this.onChain === null && this.revocation === null && !(await this.latestRootIsPrefixOf(tree))) {
      this.revocation = { keptRoots: [] };
    }
    if (tree.size === 0 && this.revocation === null) return;
    if (this.revocation !== null || (await this.deps.chain.latestAspRoot()) !== tree.root) {
      if (this.deps.publisher === null) return;
      const keptRoots = this.revocation === null ? undefined : await this.stillAccepted(this.revocation.keptRoots);
      const txHash = await this.deps.publisher.publish({ root: tree.root, depth: tree.depth, labels: tree.leaves, keptRoots });
      const revoked = keptRoots === undefined ? {} : { revoking: true, keptRoots: keptRoots.length };
      this.deps.logger.info({ aspRoot: tree.root.toString(), labels: tree.size, txHash, ...revoked }, "ASP root published");
      this.revocation = null;
    }
    this.onChain = tree;
    this.prefixRoots.push({ root: tree.root, size: tree.size });
    this.recount();
  }

  /** The path of an approved label in the on-chain ASP tree; typed errors say why there is none. */
  witness(label: bigint): MerkleWitness {
    const decision = this.decisions.get(label);
    if (decision === undefined) throw new IndexerError("DEPOSIT_NOT_FOUND", `no deposit has label ${label}`);
    if (!decision.approved) {
      throw new IndexerError(
        "LABEL_NOT_APPROVED",
        `label ${label} was excluded by the ASP curator (${decision.reason}); its depositor can take the deposit back by ragequit`,
      );
    }
    const witness = this.onChain?.witness(label);
    if (witness === undefined) {
      throw new IndexerError(
        "ASP_ROOT_NOT_PUBLISHED",
        `label ${label} is approved but no ASP root containing it is on chain yet; retry once the curator has published it`,
      );
    }
    return witness;
  }

  /** The newest ASP tree whose root the entrypoint has: the one paths are served from. */
  onChainTree(): IndexedTree {
    if (this.onChain === null) {
      throw new IndexerError("ASP_ROOT_NOT_PUBLISHED", "no ASP root of the curator's tree is on chain yet; retry once the curator has published it");
    }
    return this.onChain;
  }

  /** Whether the depositor of `label` took the deposit back by ragequit. */
  tookBack(label: bigint): boolean {
    return this.ragequits.has(label);
  }

  /**
   * The anonymity set of a payment withdrawing `withdrawnValue`: counted over the deposits approved under the
   * on-chain ASP root, the only ones a proof can name (an approval whose root is not published yet hides no one).
   */
  anonymitySetOf(withdrawnValue: bigint): { anonymitySet: number; aspRoot: bigint } {
    return { anonymitySet: this.reach.countReaching(withdrawnValue), aspRoot: this.onChain?.root ?? 0n };
  }

  status(): AspStatus {
    return {
      aspRoot: this.current.root,
      aspRootMatches: this.onChain === this.current,
      aspLabelCount: this.current.size,
      anonymitySet: this.reach.countReaching(0n),
    };
  }

  /**
   * A label at `position` of the current tree left the set: the next publication revokes, keeping the on-chain
   * prefixes that end before it. A second exclusion before that publication keeps nothing (the prefixes were
   * of the tree before the first rebuild).
   */
  private revokeFrom(position: number): void {
    const keptRoots = this.prefixRoots.filter((prefix) => prefix.size <= position).map((prefix) => prefix.root);
    this.revocation = { keptRoots: this.revocation === null ? keptRoots : [] };
  }

  /**
   * Whether the entrypoint's latest root holds only labels of `tree`, as a prefix of it: its content id (published
   * with it) is a prefix's. Asked when the curator does not know what the chain holds (after a start or a reorg):
   * a root that is not a prefix may hold a label excluded since, and must be revoked.
   */
  private async latestRootIsPrefixOf(tree: IndexedTree): Promise<boolean> {
    const latest = await this.deps.store.latestAspRoot();
    return latest === null || latest.root === 0n || prefixWithContentId(tree.leaves, latest.cid) !== undefined;
  }

  /** The roots among `roots` the entrypoint still accepts (a revocation may keep only those). */
  private async stillAccepted(roots: readonly bigint[]): Promise<bigint[]> {
    const accepted = await Promise.all(roots.map((root) => this.deps.chain.isKnownAspRoot(root)));
    return roots.filter((_, i) => accepted[i]);
  }

  /** Screens `deposits` again; returns the decisions that differ (approval or flagging list) from those in force. */
  private rescreen(deposits: readonly Deposit[], inForce: ReadonlyMap<bigint, AspVerdict>): AspDecision[] {
    const { lists } = this.deps;
    const now = new Date();
    return deposits
      .filter(({ label, depositor }) => {
        const previous = inForce.get(label);
        return previous === undefined || !sameVerdict(previous, depositor, lists);
      })
      .map((deposit) => screenDeposit(deposit, lists, now));
  }

  private async record(changed: AspDecision[]): Promise<void> {
    if (changed.length === 0) return;
    await this.deps.store.appendAspDecisions(changed);
    const excluded = changed.filter((decision) => !decision.approved).length;
    this.deps.logger.info({ approved: changed.length - excluded, excluded }, "ASP decisions changed after screening again");
  }

  private mutableTree(): IndexedTree {
    if (this.current === this.onChain) this.current = this.current.copy();
    return this.current;
  }

  /** Counts the depositors again over the deposits approved under the on-chain ASP root, the only ones a proof can name. */
  private recount(): void {
    const rooted = this.onChain;
    const screened = this.deposits.map((deposit) => ({
      depositor: deposit.depositor,
      value: deposit.value,
      approved: rooted?.indexOf(deposit.label) !== undefined,
      ragequit: this.ragequits.has(deposit.label),
    }));
    this.reach = depositorReach(screened, this.deps.policy);
  }
}

/** Labels of the approved deposits among `deposits`, in their order. */
function approvedLabels(deposits: readonly Deposit[], decisions: ReadonlyMap<bigint, AspVerdict>): bigint[] {
  return deposits.filter(({ label }) => decisions.get(label)?.approved === true).map(({ label }) => label);
}

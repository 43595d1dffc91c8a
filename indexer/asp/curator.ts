import type { Logger } from "pino";
import type { MerkleWitness } from "../../sdk/index.js";
import { anonymitySet, type AnonymitySetPolicy } from "../anonymity-set.js";
import type { ChainEvents } from "../chain/events.js";
import { IndexerError } from "../errors.js";
import type { AspDecision, DepositRecord, IndexerStore } from "../store/indexer-store.js";
import { IndexedTree } from "../trees.js";
import type { RootPublisher } from "./root-publisher.js";
import { screenDeposit } from "./screen-deposit.js";
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
  chain: { latestAspRoot(): Promise<bigint> };
  /** Null for a read-only curator that serves paths under roots someone else publishes. */
  publisher: RootPublisher | null;
  policy: AnonymitySetPolicy;
  logger: Logger;
}

type Deposit = Pick<DepositRecord, "label" | "depositor" | "value">;

/**
 * The ASP curator: screens every deposit's depositor, keeps the tree of approved labels (in deposit order),
 * publishes its root when it changes and records every decision in the audit trail. A new approval appends to the
 * tree; an exclusion after a list change rebuilds it (the circuit reads a zero sibling as "no sibling", so a
 * label cannot be removed by zeroing its leaf).
 *
 * Two trees are kept: `current`, what the curator approves now, and `onChain`, the newest tree whose root the
 * entrypoint has. Paths come from `onChain`, so a proof built from one verifies on chain even while a new root is
 * on its way; `current` is copied before it changes while the two are the same tree.
 */
export class AspCurator {
  private deposits: Deposit[] = [];
  private decisions = new Map<bigint, AspDecision>();
  private ragequits = new Set<bigint>();
  private current = IndexedTree.of([]);
  private onChain: IndexedTree | null = null;
  private rescreenPending = false;
  private anonymity = 0;

  constructor(private readonly deps: AspCuratorDeps) {}

  /** Loads deposits and decisions from the store, screens them again against the lists in force, builds the tree. */
  async load(): Promise<void> {
    const { store } = this.deps;
    const [deposits, decisions, ragequits, latestRoot] = await Promise.all([
      store.deposits(),
      store.currentAspDecisions(),
      store.ragequitLabels(),
      store.latestAspRoot(),
    ]);
    const inForce = new Map(decisions.map((decision) => [decision.label, decision]));
    const changed = this.rescreen(deposits, inForce);
    await this.record(changed);
    for (const decision of changed) inForce.set(decision.label, decision);
    const tree = await IndexedTree.build(approvedLabels(deposits, inForce));
    // Swapped in at once: the API keeps answering from the previous state while the tree is built.
    this.deposits = deposits;
    this.decisions = inForce;
    this.ragequits = new Set(ragequits);
    this.current = tree;
    this.onChain = latestRoot !== null && latestRoot.root === tree.root ? tree : null;
    this.recount();
  }

  /** Decisions on the deposits of a sync batch, to be stored with it. */
  screen(deposits: readonly DepositRecord[]): AspDecision[] {
    const now = new Date();
    return deposits.map((deposit) => screenDeposit(deposit, this.deps.lists, now));
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

  /** Re-reads the screening lists when their files changed, and screens every deposit again. */
  async reloadLists(): Promise<void> {
    if (await this.deps.lists.reloadIfChanged()) this.rescreenPending = true;
    if (!this.rescreenPending) return;
    const changed = this.rescreen(this.deposits, this.decisions);
    if (changed.length > 0) {
      // Recorded before applied: if the store fails, the next call screens again and nothing is lost.
      await this.record(changed);
      for (const decision of changed) this.decisions.set(decision.label, decision);
      this.current = await IndexedTree.build(approvedLabels(this.deposits, this.decisions));
      this.recount();
    }
    this.rescreenPending = false;
  }

  /**
   * Makes the current root the on-chain one: publishes it with the postman key unless the entrypoint already has
   * it. Nothing is published while no label is approved (the entrypoint refuses a zero root).
   */
  async publish(): Promise<void> {
    const tree = this.current;
    if (tree === this.onChain || tree.size === 0) return;
    if ((await this.deps.chain.latestAspRoot()) !== tree.root) {
      if (this.deps.publisher === null) return;
      const txHash = await this.deps.publisher.publish(tree.root, tree.leaves);
      this.deps.logger.info({ aspRoot: tree.root.toString(), labels: tree.size, txHash }, "ASP root published");
    }
    this.onChain = tree;
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

  /** Whether the depositor of `label` took the deposit back by ragequit. */
  tookBack(label: bigint): boolean {
    return this.ragequits.has(label);
  }

  status(): AspStatus {
    return {
      aspRoot: this.current.root,
      aspRootMatches: this.onChain === this.current,
      aspLabelCount: this.current.size,
      anonymitySet: this.anonymity,
    };
  }

  /** Screens `deposits` again; returns the decisions that differ (approval or flagging list) from those in force. */
  private rescreen(deposits: readonly Deposit[], inForce: ReadonlyMap<bigint, AspDecision>): AspDecision[] {
    const now = new Date();
    return deposits
      .map((deposit) => screenDeposit(deposit, this.deps.lists, now))
      .filter((next) => {
        const previous = inForce.get(next.label);
        return previous === undefined || previous.approved !== next.approved || previous.list !== next.list;
      });
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

  private recount(): void {
    const screened = this.deposits.map((deposit) => ({
      depositor: deposit.depositor,
      value: deposit.value,
      approved: this.decisions.get(deposit.label)?.approved === true,
      ragequit: this.ragequits.has(deposit.label),
    }));
    this.anonymity = anonymitySet(screened, this.deps.policy);
  }
}

/** Labels of the approved deposits among `deposits`, in their order. */
function approvedLabels(deposits: readonly Deposit[], decisions: ReadonlyMap<bigint, AspDecision>): bigint[] {
  return deposits.filter(({ label }) => decisions.get(label)?.approved === true).map(({ label }) => label);
}

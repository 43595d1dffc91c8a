import type { TransactionReceipt } from "ethers";

/**
 * Sends relays as soon as they arrive and batches only those that are already waiting: while one transaction is
 * being prepared (simulated, signed, broadcast), the relays that come in wait, and leave together as one batch the
 * moment it has reached the node. No relay waits for another's receipt, so each goes out in the next block whether
 * or not a batch forms; relays that coincide still share one transaction's gas.
 */
export class RelayQueue<Item> {
  private readonly waiting: { item: Item; settle: (result: PromiseSettledResult<TransactionReceipt>) => void }[] = [];
  private preparing = false;

  /**
   * @param send Sends one transaction for `items` (a single relay for one item) and settles each item once mined;
   *   calls `left` once the transaction reached the node (or cannot leave), so the next batch may go.
   * @param maxBatch The most items one transaction takes.
   */
  constructor(
    private readonly send: (items: Item[], left: () => void) => Promise<PromiseSettledResult<TransactionReceipt>[]>,
    private readonly maxBatch: number,
  ) {}

  submit(item: Item): Promise<TransactionReceipt> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, settle: (result) => (result.status === "fulfilled" ? resolve(result.value) : reject(result.reason)) });
      this.pump();
    });
  }

  private pump(): void {
    if (this.preparing || this.waiting.length === 0) return;
    this.preparing = true;
    const batch = this.waiting.splice(0, this.maxBatch);
    let released = false;
    const left = () => {
      if (released) return;
      released = true;
      this.preparing = false;
      this.pump();
    };
    void this.send(
      batch.map(({ item }) => item),
      left,
    )
      .catch((reason: unknown) => batch.map((): PromiseSettledResult<TransactionReceipt> => ({ status: "rejected", reason })))
      .then((results) => {
        left();
        batch.forEach(({ settle }, i) => settle(results[i]!));
      });
  }
}

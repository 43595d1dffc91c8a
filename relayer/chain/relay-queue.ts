import type { TransactionReceipt } from "ethers";

/**
 * Sends relays one transaction at a time and batches those that arrive meanwhile: while a relay transaction is
 * on its way to a block, the relays that come in wait, and leave together as one batch once it is mined. Idle, a
 * relay leaves at once (no window to wait out); under load, a batch holds what arrived within about one block.
 */
export class RelayQueue<Item> {
  private readonly waiting: { item: Item; settle: (result: PromiseSettledResult<TransactionReceipt>) => void }[] = [];
  private sending = false;

  /**
   * @param send Sends one transaction for `items` (a single relay for one item) and settles each item.
   * @param maxBatch The most items one transaction takes.
   */
  constructor(
    private readonly send: (items: Item[]) => Promise<PromiseSettledResult<TransactionReceipt>[]>,
    private readonly maxBatch: number,
  ) {}

  submit(item: Item): Promise<TransactionReceipt> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, settle: (result) => (result.status === "fulfilled" ? resolve(result.value) : reject(result.reason)) });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.sending || this.waiting.length === 0) return;
    this.sending = true;
    const batch = this.waiting.splice(0, this.maxBatch);
    try {
      const results = await this.send(batch.map(({ item }) => item)).catch((reason: unknown) =>
        batch.map((): PromiseSettledResult<TransactionReceipt> => ({ status: "rejected", reason })),
      );
      batch.forEach(({ settle }, i) => settle(results[i]!));
    } finally {
      this.sending = false;
      void this.pump();
    }
  }
}

// Run by bench/settle/settle-bench.ts in a process of its own (`fork`, pinned to other cores when BENCH_AGENT_CPUS
// is set): the agents of a load, as their own machines would run them, so that their proofs are not the relayer's
// CPU. Sends "ready"; is sent an AgentLoadPlan (agent-load.ts); each agent is an X402Agent over its own note vault
// (several notes), trees and prover, paying the seller's entry (payRequirement: reservation, quote, trees, proof,
// settle, change note) at the plan's times; sends back one PaymentRecord per payment and exits.
import { AsyncLocalStorage } from "node:async_hooks";
import { copyFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { NoteVault, X402Agent, type AgentEvent, type NoteRequest, type NoteStore } from "../../sdk/agent/index.js";
import { FacilitatorClient, type SettleX402Answer, type SettleX402ProofAnswer, type TreesAnswer, type QuoteAnswer } from "../../sdk/client/facilitator-client.js";
import { nullifierHashOf } from "../../sdk/note/note.js";
import { LocalProver } from "../../sdk/prover/local-prover.js";
import { openLoopArrivals, type AgentLoadPlan, type PaymentRecord } from "./agent-load.js";

if (process.send === undefined) throw new Error("usage: fork(agents.ts) with an IPC channel");

/** The payment whose work is running now: what each timed call adds to. */
const current = new AsyncLocalStorage<PaymentRecord>();

/** Adds the time `call` takes to the current payment's `part`. */
async function timed<T>(part: "quoteAndTreesMs", call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await call();
  } finally {
    const record = current.getStore();
    if (record !== undefined) record[part] = (record[part] ?? 0) + performance.now() - started;
  }
}

/** When each payment's first settle request left. */
const firstSent = new WeakMap<PaymentRecord, number>();

/** The relayer's side of a payment: from its first settle request to the last answer (retries and their waits included). */
async function relayed<T>(call: () => Promise<T>): Promise<T> {
  const record = current.getStore();
  if (record !== undefined && !firstSent.has(record)) firstSent.set(record, performance.now());
  try {
    return await call();
  } finally {
    if (record !== undefined) record.relayMs = performance.now() - firstSent.get(record)!;
  }
}

/** The facilitator client of every agent, timing its requests into the payment that made them. */
class TimedFacilitator extends FacilitatorClient {
  override quoteX402(body: Record<string, unknown>): Promise<{ quote: QuoteAnswer }> {
    return timed("quoteAndTreesMs", () => super.quoteX402(body));
  }

  override trees(from?: { state: number; asp: number }): Promise<TreesAnswer> {
    return timed("quoteAndTreesMs", () => super.trees(from));
  }

  override settleX402(body: Record<string, unknown>): Promise<SettleX402Answer> {
    return relayed(() => super.settleX402(body));
  }

  override settleX402Proof(body: Record<string, unknown>): Promise<SettleX402ProofAnswer> {
    return relayed(() => super.settleX402Proof(body));
  }
}

/** An agent's vault, recording how long each payment waited for its note and which note it got. */
function timedNotes(vault: NoteVault): NoteStore {
  return {
    async reserve(request: NoteRequest) {
      const started = performance.now();
      const reservation = await vault.reserve(request);
      const record = current.getStore();
      if (record !== undefined) {
        record.noteWaitMs += performance.now() - started;
        if (reservation !== undefined) record.nullifierHash = nullifierHashOf(reservation.note.nullifier).toString();
      }
      return reservation;
    },
  };
}

const onEvent = (event: AgentEvent) => {
  const record = current.getStore();
  if (record !== undefined && event.step === "proved") record.proofMs = event.proofTimeMs;
};

async function run(plan: AgentLoadPlan): Promise<PaymentRecord[]> {
  const facilitator = new TimedFacilitator(plan.relayerUrl);
  const agents = await Promise.all(
    plan.vaults.map(async (file, i) => {
      const vault = await NoteVault.open(file, plan.passphrase);
      const treesPath = `${plan.treesPath}.agent-${i}`;
      await copyFile(plan.treesPath, treesPath);
      // A prover each: an agent proves on its own machine, never behind another agent's proofs.
      const prover = new LocalProver({ workers: 1 });
      const agent = new X402Agent({ facilitator, notes: timedNotes(vault), network: plan.network, custody: plan.custody, acceptNotPrivate: true, treesPath, prover, onEvent });
      return { agent, vault, prover };
    }),
  );
  const records: PaymentRecord[] = [];
  const started = performance.now();
  const pay = async (agent: number, arrivalMs: number) => {
    const record: PaymentRecord = { agent, arrivalMs, totalMs: 0, noteWaitMs: 0 };
    records.push(record);
    try {
      const settlement = await current.run(record, () =>
        agents[agent]!.agent.payRequirement(plan.accepted, { url: plan.resource?.url ?? plan.accepted.payTo, ...(plan.resource !== undefined && { resource: plan.resource }) }),
      );
      record.fundingTxHash = settlement.fundingTxHash;
    } catch (error) {
      record.error = error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : String(error);
    }
    record.totalMs = performance.now() - started - arrivalMs;
  };

  const { load } = plan;
  if (load.kind === "open-loop") {
    const arrivals = openLoopArrivals(load, agents.length);
    await Promise.all(
      arrivals.map(async ({ atMs, agent }) => {
        await sleep(Math.max(0, atMs - (performance.now() - started)));
        await pay(agent, atMs);
      }),
    );
  } else {
    for (let burst = 0; burst < load.bursts; burst++) {
      if (burst > 0) await sleep(load.gapMs);
      const at = performance.now() - started;
      await Promise.all(Array.from({ length: load.size }, () => pay(0, at)));
    }
  }
  await Promise.all(agents.map(async ({ vault, prover }) => Promise.all([vault.close(), prover.close()])));
  return records;
}

process.once("message", (plan: AgentLoadPlan) => {
  run(plan).then(
    (records) => process.send!({ records }, () => process.exit(0)),
    (error: unknown) => process.send!({ error: error instanceof Error ? error.stack : String(error) }, () => process.exit(1)),
  );
});
process.send("ready");

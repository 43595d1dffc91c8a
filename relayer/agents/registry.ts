import { randomBytes } from "node:crypto";
import { RelayerError } from "../errors.js";
import type { AgentRecord, AgentSpend, RelayerStore } from "../store/relayer-store.js";

/** What a registration asks for (schemas/agent.ts parses the body into this). */
export type AgentRegistration = Omit<AgentRecord, "id" | "createdAt">;

export interface AgentView extends AgentRecord {
  spend: AgentSpend;
}

/** A payment an agent wants to make, checked against its limits before any note is touched. */
export interface AgentPayment {
  agentId: string;
  provider: string;
  amount: bigint;
  category?: string;
}

const today = (now: Date) => now.toISOString().slice(0, 10);

/**
 * Prototype agent registry (spec 2.7, 4.8): identity, limits, whitelist and categories, with spend tracking.
 * It does not establish production authorization: anyone may register an agent and name it in a settle.
 */
export class AgentRegistry {
  constructor(
    private readonly store: RelayerStore,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async register(registration: AgentRegistration): Promise<AgentView> {
    const agent: AgentRecord = { ...registration, id: `agent_${randomBytes(8).toString("hex")}`, createdAt: this.clock().toISOString() };
    await this.store.createAgent(agent);
    return { ...agent, spend: { totalSpent: 0n, spentToday: 0n, transactionCount: 0 } };
  }

  async lookup(id: string): Promise<AgentView> {
    const agent = await this.store.getAgent(id);
    if (agent === undefined) throw new RelayerError("NOT_FOUND", `No agent ${id} is registered.`);
    return { ...agent, spend: await this.store.agentSpend(id, today(this.clock())) };
  }

  async list(): Promise<AgentView[]> {
    const agents = await this.store.listAgents();
    const day = today(this.clock());
    return Promise.all(agents.map(async (agent) => ({ ...agent, spend: await this.store.agentSpend(agent.id, day) })));
  }

  /** Throws AGENT_LIMIT_EXCEEDED naming the limit a payment would break. */
  async check(payment: AgentPayment): Promise<void> {
    const agent = await this.lookup(payment.agentId);
    const refuse = (why: string) => {
      throw new RelayerError("AGENT_LIMIT_EXCEEDED", `Agent ${agent.id}: ${why}`);
    };
    if (payment.amount > agent.perTransactionLimit) {
      refuse(`${payment.amount} exceeds the per-transaction limit of ${agent.perTransactionLimit}.`);
    }
    if (agent.spend.spentToday + payment.amount > agent.dailyLimit) {
      refuse(`${payment.amount} on top of ${agent.spend.spentToday} spent today exceeds the daily limit of ${agent.dailyLimit}.`);
    }
    const whitelist = agent.providerWhitelist.map((address) => address.toLowerCase());
    if (whitelist.length > 0 && !whitelist.includes(payment.provider.toLowerCase())) {
      refuse(`provider ${payment.provider} is not on its whitelist.`);
    }
    if (agent.categories.length > 0 && (payment.category === undefined || !agent.categories.includes(payment.category))) {
      refuse(`category ${payment.category ?? "(none)"} is not among its permitted categories (${agent.categories.join(", ")}).`);
    }
  }

  async recordSpend(agentId: string, amount: bigint): Promise<void> {
    await this.store.recordAgentSpend(agentId, amount, today(this.clock()));
  }
}

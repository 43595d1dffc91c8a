import { randomBytes } from "node:crypto";
import { RelayerError } from "../errors.js";
import type { AgentRecord, AgentSpend, RelayerStore } from "../store/relayer-store.js";
import { agentKeyFor, isAgentKey } from "./agent-keys.js";

/** What a registration asks for (schemas/agent.ts parses the body into this). */
export type AgentRegistration = Omit<AgentRecord, "id" | "createdAt">;

/** What anyone may see of an agent: neither its owner nor its spending, which would link owners to payments. */
export type AgentPublicView = Omit<AgentRecord, "ownerWallet">;

/** What the agent's key holder sees. */
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

const publicView = ({ ownerWallet: _owner, ...agent }: AgentRecord): AgentPublicView => agent;

/**
 * Prototype agent registry (docs/api.md 2.7, 4.8): identity, limits, whitelist and categories, with spend tracking.
 * Registration returns the agent's key (agent-keys.ts), which alone shows the owner and spend and lets a
 * settle name the agent. Anyone may still register an agent: it is not production authorization.
 */
export class AgentRegistry {
  constructor(
    private readonly store: RelayerStore,
    /** The operator secret agent keys derive from (PAYER_KEY_SECRET, under its own derivation tag). */
    private readonly keySecret: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The new agent and its key: the key is given here once and never shown again. */
  async register(registration: AgentRegistration): Promise<{ agent: AgentView; agentKey: string }> {
    const agent: AgentRecord = { ...registration, id: `agent_${randomBytes(8).toString("hex")}`, createdAt: this.clock().toISOString() };
    await this.store.createAgent(agent);
    return { agent: { ...agent, spend: { totalSpent: 0n, spentToday: 0n, transactionCount: 0 } }, agentKey: agentKeyFor(this.keySecret, agent.id) };
  }

  async publicLookup(id: string): Promise<AgentPublicView> {
    return publicView(await this.record(id));
  }

  /** The full record with its spend, for the holder of the agent's key. */
  async lookup(id: string, agentKey: string | undefined): Promise<AgentView> {
    const agent = await this.record(id);
    this.assertKey(id, agentKey);
    return { ...agent, spend: await this.store.agentSpend(id, today(this.clock())) };
  }

  async list(): Promise<AgentPublicView[]> {
    return (await this.store.listAgents()).map(publicView);
  }

  /** Throws unless `agentKey` is the key of the registered agent `agentId`: what naming an agent in a settle needs. */
  async authenticate(agentId: string, agentKey: string | undefined): Promise<void> {
    await this.record(agentId);
    this.assertKey(agentId, agentKey);
  }

  /** Throws AGENT_LIMIT_EXCEEDED naming the limit a payment would break. */
  async check(payment: AgentPayment): Promise<void> {
    const agent = await this.record(payment.agentId);
    const spentToday = (await this.store.agentSpend(agent.id, today(this.clock()))).spentToday;
    const refuse = (why: string) => {
      throw new RelayerError("AGENT_LIMIT_EXCEEDED", `Agent ${agent.id}: ${why}`);
    };
    if (payment.amount > agent.perTransactionLimit) {
      refuse(`${payment.amount} exceeds the per-transaction limit of ${agent.perTransactionLimit}.`);
    }
    if (spentToday + payment.amount > agent.dailyLimit) {
      refuse(`${payment.amount} on top of ${spentToday} spent today exceeds the daily limit of ${agent.dailyLimit}.`);
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

  private async record(id: string): Promise<AgentRecord> {
    const agent = await this.store.getAgent(id);
    if (agent === undefined) throw new RelayerError("NOT_FOUND", `No agent ${id} is registered.`);
    return agent;
  }

  private assertKey(agentId: string, agentKey: string | undefined): void {
    if (agentKey === undefined) {
      throw new RelayerError("AGENT_UNAUTHORIZED", `Agent ${agentId} is used only with its key: send the agentKey its registration returned in the X-Agent-Key header.`);
    }
    if (!isAgentKey(this.keySecret, agentId, agentKey)) {
      throw new RelayerError("AGENT_UNAUTHORIZED", `The X-Agent-Key header is not the key of agent ${agentId}; send the agentKey its registration returned.`);
    }
  }
}

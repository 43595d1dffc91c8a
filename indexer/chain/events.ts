import { getAddress, type BaseContract, type Log } from "ethers";
import type { TypedContractEvent } from "../../types/ethers-contracts/common.js";
import type { IEntrypoint, IPrivacyPool } from "../../types/ethers-contracts/index.js";
import type {
  AspRootRecord,
  DepositRecord,
  EventLocation,
  LeafRecord,
  SpentNullifierRecord,
} from "../store/indexer-store.js";

/** The indexed events of a block range, each list in chain order. */
export interface ChainEvents {
  leaves: LeafRecord[];
  deposits: DepositRecord[];
  spentNullifiers: SpentNullifierRecord[];
  aspRoots: AspRootRecord[];
}

type EventArgs<E> = E extends TypedContractEvent<infer _In, infer _Out, infer Args> ? Args : never;
type Collect<E> = (args: EventArgs<E>, at: EventLocation, into: ChainEvents) => void;
type Decode = (log: Log, into: ChainEvents) => void;

/** The contracts the indexer follows, with the addresses their logs carry. */
export interface FollowedContracts {
  pool: IPrivacyPool;
  entrypoint: IEntrypoint;
}

/**
 * Decodes the pool's and the entrypoint's logs through their compiled ABIs (TypeChain bindings), into the
 * records the store keeps. Logs of other events or contracts are not expected: `filter` asks the node only for
 * the topics decoded here.
 */
export class LogDecoder {
  private readonly decoders = new Map<string, Decode>();
  readonly filter: { address: string[]; topics: string[][] };

  constructor(contracts: FollowedContracts, addresses: { pool: string; entrypoint: string }) {
    const { pool, entrypoint } = contracts;
    this.on(pool, addresses.pool, pool.getEvent("LeafInserted"), ({ leafIndex, leaf }, at, into) => {
      into.leaves.push({ leafIndex: Number(leafIndex), commitment: leaf, ...at });
    });
    this.on(pool, addresses.pool, pool.getEvent("Deposited"), (args, at, into) => {
      const { depositor, commitment, label, value, precommitment } = args;
      into.deposits.push({ depositor: getAddress(depositor), commitment, label, value, precommitment, ...at });
    });
    this.on(pool, addresses.pool, pool.getEvent("Withdrawn"), ({ spentNullifierHash }, at, into) => {
      into.spentNullifiers.push({ nullifierHash: spentNullifierHash, kind: "withdrawal", label: null, ...at });
    });
    this.on(pool, addresses.pool, pool.getEvent("Ragequit"), ({ spentNullifierHash, label }, at, into) => {
      into.spentNullifiers.push({ nullifierHash: spentNullifierHash, kind: "ragequit", label, ...at });
    });
    this.on(entrypoint, addresses.entrypoint, entrypoint.getEvent("RootUpdated"), ({ root, cid, timestamp }, at, into) => {
      into.aspRoots.push({ root, cid, timestamp: Number(timestamp), ...at });
    });
    const topics = [...new Set([...this.decoders.keys()].map((key) => key.split(":")[1]!))];
    this.filter = { address: [addresses.pool, addresses.entrypoint], topics: [topics] };
  }

  decode(logs: readonly Log[]): ChainEvents {
    const events: ChainEvents = { leaves: [], deposits: [], spentNullifiers: [], aspRoots: [] };
    for (const log of logs) {
      const decode = this.decoders.get(key(log.address, log.topics[0] ?? ""));
      if (decode === undefined) throw new Error(`unexpected log ${log.topics[0]} from ${log.address}`);
      decode(log, events);
    }
    return events;
  }

  private on<E extends TypedContractEvent>(contract: BaseContract, address: string, event: E, collect: Collect<E>): void {
    this.decoders.set(key(address, event.fragment.topicHash), (log, into) => {
      const args = contract.interface.decodeEventLog(event.fragment, log.data, log.topics).toObject() as EventArgs<E>;
      collect(args, { blockNumber: log.blockNumber, txHash: log.transactionHash, logIndex: log.index }, into);
    });
  }
}

const key = (address: string, topic: string) => `${getAddress(address)}:${topic}`;

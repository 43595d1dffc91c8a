import { Contract, Interface, type ContractRunner, type ContractTransactionResponse, type InterfaceAbi, type Log, type Overrides } from "ethers";

// Types for the generated ABIs of abis.ts, read from the `as const` ABI itself (what TypeChain's bindings give the
// rest of the repository, which the SDK cannot import): a name, argument or field that the contracts no longer have
// fails to typecheck, and abis.ts cannot drift from the contracts (test/sdk/contract-abis.test.ts).

interface AbiParameter {
  readonly name: string;
  readonly type: string;
  readonly components?: readonly AbiParameter[];
}

interface AbiFunction {
  readonly type: "function";
  readonly name: string;
  readonly inputs: readonly AbiParameter[];
  readonly outputs: readonly AbiParameter[];
  readonly stateMutability: string;
}

interface AbiEvent {
  readonly type: "event";
  readonly name: string;
  readonly inputs: readonly AbiParameter[];
}

export type Abi = readonly (AbiFunction | AbiEvent)[];

/** The value ethers takes and gives for a Solidity type (those of abis.ts: integers, addresses, structs, arrays). */
type ValueOf<P extends AbiParameter> = P["type"] extends `${infer Element}[]`
  ? ValueOf<{ name: P["name"]; type: Element; components: P["components"] }>[]
  : P["type"] extends "tuple"
    ? StructOf<NonNullable<P["components"]>>
    : P["type"] extends `uint${string}` | `int${string}`
      ? bigint
      : P["type"] extends "address" | "string" | `bytes${string}`
        ? string
        : P["type"] extends "bool"
          ? boolean
          : never;

type StructOf<Fields extends readonly AbiParameter[]> = { [Field in Fields[number] as Field["name"]]: ValueOf<Field> };

type ArgumentsOf<Inputs extends readonly AbiParameter[]> = { -readonly [I in keyof Inputs]: ValueOf<Inputs[I]> };

type FunctionsOf<A extends Abi> = Extract<A[number], { type: "function" }>;

type ResultOf<F extends AbiFunction> = F["outputs"] extends readonly [infer Only extends AbiParameter] ? ValueOf<Only> : unknown;

/** A view is called (at the overrides' blockTag, when given); any other function is sent, and answers its transaction. */
type MethodOf<F extends AbiFunction> = F["stateMutability"] extends "view" | "pure"
  ? (...args: [...ArgumentsOf<F["inputs"]>, overrides?: Pick<Overrides, "blockTag">]) => Promise<ResultOf<F>>
  : (...args: [...ArgumentsOf<F["inputs"]>, overrides?: Overrides]) => Promise<ContractTransactionResponse>;

/** A contract at an address with a method per function of `A`. */
export type TypedContract<A extends Abi> = { [F in FunctionsOf<A> as F["name"]]: MethodOf<F> };

export type EventName<A extends Abi> = Extract<A[number], { type: "event" }>["name"];

/** An event's fields by name. */
export type EventArgs<A extends Abi, N extends EventName<A>> = StructOf<Extract<A[number], { type: "event"; name: N }>["inputs"]>;

export function connectContract<A extends Abi>(abi: A, address: string, runner: ContractRunner): TypedContract<A> {
  return new Contract(address, abi as unknown as InterfaceAbi, runner) as unknown as TypedContract<A>;
}

const interfaces = new WeakMap<Abi, Interface>();

function interfaceOf(abi: Abi): Interface {
  let known = interfaces.get(abi);
  if (known === undefined) interfaces.set(abi, (known = new Interface(abi as unknown as InterfaceAbi)));
  return known;
}

/** The topic an event's logs carry first. */
export function eventTopic<A extends Abi>(abi: A, name: EventName<A>): string {
  return interfaceOf(abi).getEvent(name)!.topicHash;
}

/** A log of event `name`, decoded by its fields' names. */
export function decodeEvent<A extends Abi, N extends EventName<A>>(abi: A, name: N, log: Pick<Log, "data" | "topics">): EventArgs<A, N> {
  const iface = interfaceOf(abi);
  return iface.decodeEventLog(iface.getEvent(name)!, log.data, log.topics).toObject() as EventArgs<A, N>;
}

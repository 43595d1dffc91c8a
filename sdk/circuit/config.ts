import circuitConfig from "./circuit.config.json" with { type: "json" };

/**
 * The one circuit configuration (sdk/circuit/circuit.config.json) that drives compile, setup, SDK and tests; the
 * SDK owns it, as it owns the keys set up from it. `file` is the circuit's source under circuits/.
 */
export const CIRCUIT_CONFIG = circuitConfig;

/** Largest depth a state or ASP tree may reach; proofs pad their paths to it. */
export const MAX_TREE_DEPTH: number = circuitConfig.params.maxTreeDepth;

import circuitConfig from "../../circuits/circuit.config.json" with { type: "json" };

/** The one circuit configuration (circuits/circuit.config.json) that drives compile, setup, SDK and tests. */
export const CIRCUIT_CONFIG = circuitConfig;

/** Largest depth a state or ASP tree may reach; proofs pad their paths to it. */
export const MAX_TREE_DEPTH: number = circuitConfig.params.maxTreeDepth;

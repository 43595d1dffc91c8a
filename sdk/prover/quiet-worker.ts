// Imported first by proof-worker.ts, so that it runs before any module that prints. A proof worker says nothing:
// the witness calculator prints a failed constraint with its values (private inputs among them), snarkjs' web-worker
// shim prints an error when it is loaded in a worker thread, and any output of a worker, even one the pool never
// reads, keeps the parent process alive (node:worker_threads refs the stream's port for good).
for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) console[method] = () => undefined;
for (const stream of [process.stdout, process.stderr]) stream.write = () => true;

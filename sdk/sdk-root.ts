import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The SDK's own folder, where its circuit artifacts (artifacts/) and native prover (native-prover/, built into
 * build/native-prover/) are: sdk/ in the repository, where these sources run as they are, or the installed
 * package's folder, whose compiled files are under dist/. Nothing of the SDK is found by a repository path.
 */
export const SDK_ROOT = path.basename(here) === "dist" ? path.dirname(here) : here;

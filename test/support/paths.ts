import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout's root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Public vectors written by others, vendored unchanged with their sources and licences. */
export const EXTERNAL_VECTORS = resolve(ROOT, "vectors/external");

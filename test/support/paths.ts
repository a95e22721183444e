import { fileURLToPath } from "node:url";
import { resolve } from "node:path";

/** The shared folder beside the checkout (CI lays a copy of it there too). */
export const SHARED = process.env.COUNTERSIGN_SHARED ?? resolve(fileURLToPath(import.meta.url), "../../../../shared");

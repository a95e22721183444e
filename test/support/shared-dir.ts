import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The shared folder holding the external vectors: COUNTERSIGN_SHARED when set, else `shared/`
 * beside the checkout (where CI lays its copy). Fails loudly rather than skipping vectors.
 */
export function sharedDir(): string {
  const dir = process.env.COUNTERSIGN_SHARED ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../shared");
  if (!existsSync(resolve(dir, "vectors-external"))) {
    throw new Error(`external vectors not found in ${dir}: set COUNTERSIGN_SHARED to the folder holding vectors-external/`);
  }
  return dir;
}

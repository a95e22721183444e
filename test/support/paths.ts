import { sharedDir } from "./shared-dir.js";

/** The shared folder beside the checkout, or COUNTERSIGN_SHARED. */
export const SHARED = sharedDir();

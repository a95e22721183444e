import { failure, type Failure } from "../codes.js";
import type { Receipt } from "../receipt.js";

/** Step 2: the receipt names exactly the audience the consumer speaks for. */
export function checkAudience(r: Receipt, audience: string): Failure[] {
  return r.audience === audience ? [] : [failure("AUDIENCE_MISMATCH", `receipt is for ${r.audience}, not ${audience}`)];
}

/**
 * The UsageLedger adapter: which object holds a relying party's usage evidence, and the read a
 * status view uses. One object per relying party, named by the party (see docs/capacity.md).
 */
import type { Env } from "./env.js";
import type { UsageCounts } from "../durable-objects/usage-ledger.js";
import { withTimeout } from "./http.js";

export const usageLedger = (env: Env, party: string) => env.USAGE_LEDGER.get(env.USAGE_LEDGER.idFromName(`party:${party}`));

/**
 * Usage evidence counts summed over `parties` (relying parties as `partyScope` names them, e.g.
 * `services.relyingParties.list()` mapped by `partyScope`): receipts by attribution (`attributed`, `partial`,
 * `unavailable`), latest estimates by kind and reconciliations by disposition (`none` where a
 * receipt has no estimate or no reconciliation yet). A party that never stored anything adds
 * zeros and writes nothing.
 */
export async function readUsageCounts(env: Env, parties: readonly string[], timeoutMs: number): Promise<UsageCounts> {
  const all = await Promise.all(parties.map((p) => withTimeout(usageLedger(env, p).counts() as Promise<UsageCounts>, timeoutMs, "usage ledger")));
  const total: UsageCounts = { receipts: 0, attribution: {}, estimates: {}, reconciliation: {} };
  const add = (into: Record<string, number>, from: Record<string, number>) => {
    for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
  };
  for (const c of all) {
    total.receipts += c.receipts;
    add(total.attribution, c.attribution);
    add(total.estimates, c.estimates);
    add(total.reconciliation, c.reconciliation);
  }
  return total;
}

import { failure, type Failure } from "../codes.js";
import { DEFAULT_CLOCK_SKEW, type Receipt } from "../receipt.js";

export interface FreshnessPolicy {
  /** Longest accepted `expires_at − issued_at`, seconds (CCS default 300). */
  maxLifetime: number;
  /** Cap on the receipt's own `max_clock_skew`, seconds (CCS default 30). */
  skewCap: number;
}

export const DEFAULT_FRESHNESS: FreshnessPolicy = { maxLifetime: 300, skewCap: 30 };

/** The skew this verifier grants a receipt: its own (the draft's 30 s when it states none), capped by policy. */
export const grantedSkew = (r: Receipt, policy: FreshnessPolicy): number => Math.min(r.max_clock_skew ?? DEFAULT_CLOCK_SKEW, policy.skewCap);

/** A span of seconds for a failure's detail, to the millisecond (the clock's own resolution). */
/** A span of seconds as failure details print it: to the millisecond. */
export const seconds = (s: number): number => Math.round(s * 1000) / 1000;

/** Step 1: `issued_at − skew ≤ now ≤ expires_at + skew`, a positive lifetime within policy. */
export function checkFreshness(r: Receipt, now: number, policy: FreshnessPolicy): Failure[] {
  const skew = grantedSkew(r, policy);
  const out: Failure[] = [];
  if (!(r.expires_at > r.issued_at)) out.push(failure("FRESHNESS_EXPIRED", "expires_at is not after issued_at"));
  else if (r.expires_at - r.issued_at > policy.maxLifetime) {
    out.push(failure("FRESHNESS_EXPIRED", `lifetime ${r.expires_at - r.issued_at}s exceeds the policy maximum of ${policy.maxLifetime}s`));
  }
  if (now < r.issued_at - skew) out.push(failure("FRESHNESS_EXPIRED", `issued_at is ${seconds(r.issued_at - now)}s in the future (skew ${skew}s)`));
  if (now > r.expires_at + skew) out.push(failure("FRESHNESS_EXPIRED", `expired ${seconds(now - r.expires_at)}s ago (skew ${skew}s)`));
  return out;
}

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

/** A span of seconds as failure details print it: to the millisecond (the clock's own resolution). */
export const seconds = (s: number): number => Math.round(s * 1000) / 1000;

/**
 * A span that exceeds `limit`, as a refusal's detail prints it: to the millisecond, or "over
 * <limit>" when it exceeds the limit by less than rounding keeps (a span 0.2 µs past a 30 s skew
 * would otherwise read "30s", the limit itself, for a refusal).
 */
const beyond = (s: number, limit: number): string => (seconds(s) > limit ? `${seconds(s)}` : `over ${limit}`);

/** Step 1: `issued_at − skew ≤ now ≤ expires_at + skew`, a positive lifetime within policy. */
export function checkFreshness(r: Receipt, now: number, policy: FreshnessPolicy): Failure[] {
  const skew = grantedSkew(r, policy);
  const out: Failure[] = [];
  if (!(r.expires_at > r.issued_at)) out.push(failure("FRESHNESS_EXPIRED", "expires_at is not after issued_at"));
  else if (r.expires_at - r.issued_at > policy.maxLifetime) {
    out.push(failure("FRESHNESS_EXPIRED", `lifetime ${beyond(r.expires_at - r.issued_at, policy.maxLifetime)}s exceeds the policy maximum of ${policy.maxLifetime}s`));
  }
  if (now < r.issued_at - skew) out.push(failure("FRESHNESS_EXPIRED", `issued_at is ${beyond(r.issued_at - now, skew)}s in the future (skew ${skew}s)`));
  if (now > r.expires_at + skew) out.push(failure("FRESHNESS_EXPIRED", `expired ${beyond(now - r.expires_at, skew)}s ago (skew ${skew}s)`));
  return out;
}

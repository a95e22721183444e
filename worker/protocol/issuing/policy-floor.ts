/**
 * The verifier policy floor (CCS §4.4): a server's self-declared security profile is compared
 * with the floor in the canonical configuration, and a weaker one is a deny with block_reason
 * "policy_floor_violation", never a downgrade. Profiles are a closed, totally ordered list.
 */
import type { RuleResult } from "./rules/types.js";

/** Weakest first: no protection; TLS only; TLS and an authenticated caller; mutual TLS; mutual TLS with workload attestation. */
export const SECURITY_PROFILES = ["none", "tls", "authenticated", "mutual-tls", "attested"] as const;
export type SecurityProfile = (typeof SECURITY_PROFILES)[number];
export const DEFAULT_POLICY_FLOOR: SecurityProfile = "tls";
export const POLICY_FLOOR_VIOLATION = "policy_floor_violation";
export const POLICY_FLOOR_CHECK = "policy-floor";

export const isSecurityProfile = (v: unknown): v is SecurityProfile => SECURITY_PROFILES.includes(v as SecurityProfile);

/**
 * Allow when nothing is declared (the floor judges declarations; there is nothing to downgrade
 * to) or the declaration is at least the floor; deny when it is weaker.
 */
export function checkPolicyFloor(declared: SecurityProfile | null, floor: SecurityProfile): RuleResult {
  if (declared === null) return { name: POLICY_FLOOR_CHECK, verdict: "allow", reason: "no server profile declared" };
  const weaker = SECURITY_PROFILES.indexOf(declared) < SECURITY_PROFILES.indexOf(floor);
  return weaker
    ? { name: POLICY_FLOOR_CHECK, verdict: "deny", reason: POLICY_FLOOR_VIOLATION }
    : { name: POLICY_FLOOR_CHECK, verdict: "allow", reason: `${declared} meets the floor ${floor}` };
}

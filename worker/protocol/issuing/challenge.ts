/**
 * The challenge loop (CCS §4.7). When a Command lacks evidence a check needs, the verifier fails
 * closed: the receipt is a deny, and the answer carries a challenge naming each missing piece of
 * evidence and its form, with a deadline derived from the challenge policy:
 * `expires_at = issued_at + min(base_duration × deadline_multiplier, max_deadline)`.
 * Evidence supplied before the deadline re-evaluates the same Command (a fresh receipt); after it
 * the deny stands. Nothing here is ever a provisional allow. Pure: the clock is a parameter.
 */
import type { ChallengePolicy } from "../manifest/manifest.js";
import type { Intake } from "./command.js";
import { SECURITY_PROFILES, type SecurityProfile } from "./policy-floor.js";
import type { RuleResult } from "./rules/types.js";

/** The check a challenge adds to the rule summary: its deny is what makes the gap fail closed. */
export const EVIDENCE_CHECK = "evidence";
export const EVIDENCE_REQUIRED = "evidence_required";

export type EvidenceName = "human_approval" | "server_profile";

/** One missing piece of evidence: what, for which check, in which form. */
export interface EvidenceGap {
  evidence: EvidenceName;
  /** The check that needs it. */
  needed_by: string;
  /** The form the evidence must take, as a JSON shape. */
  format: string;
  /** human_approval: the request_hash the approval must name. */
  request_hash?: string;
  /** server_profile: the weakest profile the floor accepts. */
  minimum?: SecurityProfile;
}

export interface Challenge {
  trace_id: string;
  missing: EvidenceGap[];
  issued_at: number;
  expires_at: number;
  /** Where to send the evidence, with the intake token. */
  respond_to: string;
}

/**
 * What the Command lacks, judged after the rules: SEC-005's approval of this very request for a
 * destructive tool, and the server's declared profile when the configuration requires one for the
 * policy floor. Empty when nothing is missing, and when a check denies on its own: evidence
 * could not change that verdict, so no challenge is offered.
 */
export function evidenceGaps(intake: Intake, results: readonly RuleResult[], requestHash: string, config: { policy_floor: SecurityProfile; server_profile_required?: boolean }): EvidenceGap[] {
  if (results.some((r) => r.verdict === "deny")) return [];
  const gaps: EvidenceGap[] = [];
  const sec005 = results.find((r) => r.name === "SEC-005");
  if (sec005?.verdict === "escalate") {
    gaps.push({ evidence: "human_approval", needed_by: "SEC-005", format: '{"approver": "<non-empty string, at most 512 bytes>", "request_hash": "<this request_hash>"}', request_hash: requestHash });
  }
  if (config.server_profile_required && intake.serverProfile === null) {
    gaps.push({ evidence: "server_profile", needed_by: "policy-floor", format: `one of ${SECURITY_PROFILES.map((p) => JSON.stringify(p)).join(", ")}`, minimum: config.policy_floor });
  }
  return gaps;
}

/** The check result that turns the gaps into a deny. */
export const evidenceDeny = (gaps: readonly EvidenceGap[]): RuleResult => ({ name: EVIDENCE_CHECK, verdict: "deny", reason: `${EVIDENCE_REQUIRED}: ${gaps.map((g) => g.evidence).join(", ")}` });

/** issued_at + min(base_duration × deadline_multiplier, max_deadline), to the millisecond. */
export function challengeDeadline(issuedAt: number, policy: ChallengePolicy): number {
  return Math.round((issuedAt + Math.min(policy.base_duration * policy.deadline_multiplier, policy.max_deadline)) * 1000) / 1000;
}

export function buildChallenge(traceId: string, gaps: EvidenceGap[], issuedAt: number, expiresAt: number): Challenge {
  return { trace_id: traceId, missing: gaps, issued_at: issuedAt, expires_at: expiresAt, respond_to: `/v1/intake/${traceId}/evidence` };
}

/** The intake message an Intake was parsed from, in its normalised form: parsing it again gives the same Intake. */
export function intakeMessage(intake: Intake): Record<string, unknown> {
  return {
    ...intake.command,
    ...(intake.audience !== null ? { audience: intake.audience } : {}),
    ...(intake.humanApproval ? { human_approval: intake.humanApproval } : {}),
    ...(intake.serverProfile ? { server_profile: intake.serverProfile } : {}),
  };
}

/** Why `evidence` cannot answer `gaps` (a name not asked for, or nothing given), or null. */
export function evidenceProblem(evidence: Record<string, unknown>, gaps: readonly EvidenceGap[]): string | null {
  const names = Object.keys(evidence);
  if (names.length === 0) return "give at least one piece of the missing evidence";
  const asked = new Set(gaps.map((g) => g.evidence));
  const extra = names.filter((n) => !asked.has(n as EvidenceName));
  return extra.length > 0 ? `the challenge did not ask for ${extra.join(", ")}` : null;
}

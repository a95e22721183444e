/**
 * CCS §9 verifier classes and the 13.7 allow-only detection. Pure: the class is what an anchor
 * declares, the tally is what the deployment's decision counters hold.
 *
 * - A: built, run and audited by the relying party's own organisation.
 * - B: built by a third party and independently audited; the anchor names the report and its date.
 * - C: claims conformance, unaudited. The class of an anchor that declares none.
 */
import { failure, type Failure } from "../codes.js";

export const VERIFIER_CLASSES = ["A", "B", "C"] as const;
export type VerifierClass = (typeof VERIFIER_CLASSES)[number];
export const DEFAULT_VERIFIER_CLASS: VerifierClass = "C";

/** The audit a Class B anchor names: the report (a URI or a reference) and its date. */
export interface AuditReference {
  report: string;
  /** YYYY-MM-DD. */
  date: string;
}

/**
 * What the schema's YYYY-MM-DD form cannot say of a Class B audit's date: it is a day of the
 * calendar (not 2026-02-31) and it has come somewhere on Earth by `now` (Unix seconds): an audit
 * not yet made vouches for nothing.
 */
export function auditDateProblem(date: string, now: number): string | null {
  const [y, m, d] = date.split("-").map(Number);
  // setUTCFullYear, not Date.UTC: Date.UTC reads a year below 100 as 1900 + year.
  const back = new Date(0);
  back.setUTCFullYear(y, m - 1, d);
  const day = back.getTime();
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== m - 1 || back.getUTCDate() !== d) return `audit.date ${date} is not a day of the calendar`;
  // UTC+14 is the earliest any day begins.
  if (day / 1000 > now + 14 * 3600) return `audit.date ${date} is in the future: an audit not yet made vouches for nothing`;
  return null;
}

/** The draft's 13.7 detection condition: this many allow verdicts and nothing else flags an issuer. */
export const DEFAULT_REVIEW_THRESHOLD = 10_000;

/** Assurance order: A above B above C. */
const RANK: Record<VerifierClass, number> = { A: 3, B: 2, C: 1 };

/** Whether `actual` is at least `floor`. */
export const classMeets = (actual: VerifierClass, floor: VerifierClass): boolean => RANK[actual] >= RANK[floor];

/** The strictest of some floors (null where none is set), or null when none is. */
export const strictestFloor = (floors: readonly (VerifierClass | null)[]): VerifierClass | null =>
  floors.reduce<VerifierClass | null>((strictest, f) => (f !== null && (strictest === null || RANK[f] > RANK[strictest]) ? f : strictest), null);

/** The refusal a relying party's floor adds, or nothing when the class meets it (or there is none). */
export function checkVerifierClass(issuer: string, actual: VerifierClass, floor: VerifierClass | null): Failure[] {
  if (floor === null || classMeets(actual, floor)) return [];
  return [failure("VERIFIER_CLASS_INSUFFICIENT", `${issuer} is a Class ${actual} verifier; this relying party requires Class ${floor} or above for this audience`)];
}

/** Verdicts counted for one issuer over its whole pinned life. */
export interface VerdictTally {
  allows: number;
  /** deny and escalate together. */
  others: number;
}

/**
 * 13.7: an issuer whose receipts have been allow-only for `threshold` verdicts is flagged for
 * review. A single deny or escalate ever counted clears the condition.
 */
export const allowOnly = (tally: VerdictTally, threshold: number): boolean => tally.others === 0 && tally.allows >= threshold;

export function reviewWarning(issuer: string, threshold: number): Failure {
  return failure("VERIFIER_REVIEW_REQUIRED", `every verdict counted for ${issuer} (at least ${threshold}) is allow: flagged for review (CCS 13.7)`);
}

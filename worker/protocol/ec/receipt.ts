/**
 * EC-Agent receipts: a claim bound to the exact spans it cites and to the exact ordered trace
 * that produced it. Integrity (this file) decides validity; the support plane only reports.
 */
import { SHA256_REF } from "../encoding.js";
import { asciiCanonical, DOMAINS, domainDigest } from "./canonical.js";
import { corpusDigest, type Corpus } from "./corpus.js";
import { checkEvidence, codePointIndex, type EvidenceRef, type EvidenceReason } from "./evidence.js";
import { answerIndex, EC_SCHEMA_VERSION, executionDigest, traceProblems, type EventReason, type TraceEvent } from "./events.js";
import { lexicalSupport, type LexicalReason, type LexicalResult } from "./support.js";

export interface EcReceipt {
  schema_version: string;
  policy_id: string;
  run_id: string;
  corpus_digest: string;
  claim_id: string;
  claim: string;
  /** Index of the claim_emission event of this claim in the run's trace. */
  emission_anchor: number;
  evidence: EvidenceRef[];
  /** Trace digest of the events through the answer. */
  execution_digest: string;
  joint_digest: string;
  /** The integrity result the issuer recorded; replay compares it with the recomputed one. */
  integrity: { valid: boolean; reasons: string[] };
}

/** The closed set of integrity reason codes, in the order checks run. */
export const INTEGRITY_REASONS = [
  "SCHEMA_INVALID",
  "EVIDENCE_EMPTY",
  "CORPUS_DIGEST_MISMATCH",
  "SOURCE_UNKNOWN",
  "SOURCE_REVOKED",
  "SOURCE_UNAUTHORIZED",
  "SOURCE_VERSION_MISMATCH",
  "OFFSET_NOT_INTEGER",
  "OFFSET_NEGATIVE",
  "OFFSET_REVERSED",
  "OFFSET_EMPTY",
  "OFFSET_OUT_OF_RANGE",
  "QUOTE_MISMATCH",
  "SPAN_HASH_MISMATCH",
  "EVENT_SCHEMA_INVALID",
  "EVENT_ACTION_TYPE_INVALID",
  "EVENT_DUPLICATE_ACTION_ID",
  "EVENT_NO_ANSWER",
  "EXECUTION_DIGEST_MISMATCH",
  "ANCHOR_MISMATCH",
  "JOINT_DIGEST_MISMATCH",
] as const;
export type IntegrityReason = (typeof INTEGRITY_REASONS)[number];

export interface Finding {
  reason: IntegrityReason;
  detail: string;
  evidence?: number;
  event?: number;
}

export interface EcVerification {
  valid: boolean;
  /** Integrity reasons in check order, or ["OK"]; then the lexical support reason (never affects `valid`). */
  reasons: (IntegrityReason | "OK" | LexicalReason)[];
  findings: Finding[];
  recomputed: { corpus_digest: string; execution_digest: string | null; joint_digest: string | null };
  support: { lexical: LexicalResult[]; supported: boolean };
}

const RECEIPT_FIELDS = ["schema_version", "policy_id", "run_id", "corpus_digest", "claim_id", "claim", "emission_anchor", "evidence", "execution_digest", "joint_digest", "integrity"];

function schemaProblem(value: unknown): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "receipt must be an object";
  const r = value as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!RECEIPT_FIELDS.includes(key)) return `unknown field ${JSON.stringify(key)}`;
  for (const key of RECEIPT_FIELDS) if (!Object.hasOwn(r, key)) return `missing field ${key}`;
  if (r.schema_version !== EC_SCHEMA_VERSION) return `schema_version must be ${JSON.stringify(EC_SCHEMA_VERSION)}`;
  for (const key of ["policy_id", "run_id", "claim_id"]) if (typeof r[key] !== "string" || r[key] === "") return `${key} must be a non-empty string`;
  if (typeof r.claim !== "string") return "claim must be a string";
  if (!Number.isSafeInteger(r.emission_anchor) || (r.emission_anchor as number) < 0) return "emission_anchor must be an integer >= 0";
  if (!Array.isArray(r.evidence)) return "evidence must be an array";
  for (const key of ["corpus_digest", "execution_digest", "joint_digest"]) if (typeof r[key] !== "string" || !SHA256_REF.test(r[key] as string)) return `${key} must be "sha256:" + 64 lowercase hex`;
  const i = r.integrity as Record<string, unknown> | null;
  if (!i || typeof i !== "object" || typeof i.valid !== "boolean" || !Array.isArray(i.reasons) || !i.reasons.every((x) => typeof x === "string") || Object.keys(i).length !== 2) {
    return "integrity must be {valid: boolean, reasons: string[]}";
  }
  return null;
}

/** What the joint digest binds. */
export type JointInput = Pick<EcReceipt, "schema_version" | "policy_id" | "run_id" | "corpus_digest" | "claim_id" | "claim" | "emission_anchor" | "evidence"> & { trace_digest: string };

/** SHA-256 over the joint domain separator and the canonical joint input; null when the evidence has no canonical form. */
export async function jointDigest(input: JointInput): Promise<string | null> {
  try {
    asciiCanonical(input.evidence);
  } catch {
    return null;
  }
  return domainDigest(DOMAINS.joint, input);
}

/**
 * The verifier: the receipt against the corpus map and the ordered events. Every check runs;
 * `valid` holds only when none found anything. An absent evidence set is never valid.
 */
export async function verifyEcReceipt(receipt: unknown, corpus: Corpus, events: unknown, known: { corpusDigest?: string } = {}): Promise<EcVerification> {
  const findings: Finding[] = [];
  const recomputedCorpus = known.corpusDigest ?? (await corpusDigest(corpus));
  const problem = schemaProblem(receipt);
  if (problem) {
    return { valid: false, reasons: ["SCHEMA_INVALID", "SUPPORT_EMPTY"], findings: [{ reason: "SCHEMA_INVALID", detail: problem }], recomputed: { corpus_digest: recomputedCorpus, execution_digest: null, joint_digest: null }, support: { lexical: [], supported: false } };
  }
  const r = receipt as EcReceipt;
  if (r.evidence.length === 0) findings.push({ reason: "EVIDENCE_EMPTY", detail: "a receipt must cite at least one span" });
  if (recomputedCorpus !== r.corpus_digest) findings.push({ reason: "CORPUS_DIGEST_MISMATCH", detail: "the corpus is not the one the receipt was issued over" });

  const cps = codePointIndex(corpus);
  const spans: string[] = [];
  for (const [i, ref] of r.evidence.entries()) {
    const check = await checkEvidence(ref, i, corpus, cps);
    findings.push(...check.findings.map((f) => ({ reason: f.reason as EvidenceReason, detail: f.detail, evidence: f.evidence })));
    spans.push(check.selected ?? (typeof (ref as { quote?: unknown })?.quote === "string" ? (ref as EvidenceRef).quote : ""));
  }

  let execution: string | null = null;
  const eventProblems = traceProblems(events);
  findings.push(...eventProblems.map((p) => ({ reason: p.reason as EventReason, detail: p.detail, event: p.index })));
  if (eventProblems.length === 0) {
    const trace = events as TraceEvent[];
    execution = await executionDigest(trace);
    if (execution === null) findings.push({ reason: "EVENT_NO_ANSWER", detail: "the trace has no answer event" });
    else if (execution !== r.execution_digest) findings.push({ reason: "EXECUTION_DIGEST_MISMATCH", detail: "the trace through the answer is not the one the receipt was issued for" });
    const anchored = trace[r.emission_anchor];
    const answer = answerIndex(trace);
    if (!anchored || anchored.action_type !== "claim_emission" || anchored.claim_id !== r.claim_id || anchored.output !== r.claim || (answer >= 0 && r.emission_anchor > answer)) {
      findings.push({ reason: "ANCHOR_MISMATCH", detail: `event ${r.emission_anchor} is not the emission of claim ${r.claim_id} with this text before the answer`, event: r.emission_anchor });
    }
  }

  const joint = await jointDigest({ ...pickJoint(r), trace_digest: execution ?? r.execution_digest });
  if (joint !== r.joint_digest) findings.push({ reason: "JOINT_DIGEST_MISMATCH", detail: "the joint digest does not bind this claim, anchor, evidence, run, policy, corpus and trace" });

  const order = (f: Finding) => INTEGRITY_REASONS.indexOf(f.reason);
  findings.sort((a, b) => order(a) - order(b));
  const integrity = [...new Set(findings.map((f) => f.reason))];
  const lexical = spans.map((span) => lexicalSupport(r.claim, span));
  const supported = lexical.some((l) => l.supported);
  const supportReason: LexicalReason = lexical.find((l) => l.supported)?.reason ?? lexical.find((l) => l.reason === "SUPPORT_LEXICAL_NONE")?.reason ?? "SUPPORT_EMPTY";
  return {
    valid: integrity.length === 0,
    reasons: [...(integrity.length ? integrity : (["OK"] as const)), supportReason],
    findings,
    recomputed: { corpus_digest: recomputedCorpus, execution_digest: execution, joint_digest: joint },
    support: { lexical, supported },
  };
}

const pickJoint = (r: EcReceipt) => ({
  schema_version: r.schema_version,
  policy_id: r.policy_id,
  run_id: r.run_id,
  corpus_digest: r.corpus_digest,
  claim_id: r.claim_id,
  claim: r.claim,
  emission_anchor: r.emission_anchor,
  evidence: r.evidence,
});

/** Issues a receipt for a claim emitted at `emission_anchor` of `events`, citing `evidence`. */
export async function issueEcReceipt(input: { policy_id: string; run_id: string; claim_id: string; claim: string; emission_anchor: number; evidence: EvidenceRef[]; corpus: Corpus; events: TraceEvent[] }): Promise<EcReceipt> {
  const execution = await executionDigest(input.events);
  if (execution === null) throw new Error("the trace has no answer event");
  const base = { schema_version: EC_SCHEMA_VERSION, policy_id: input.policy_id, run_id: input.run_id, corpus_digest: await corpusDigest(input.corpus), claim_id: input.claim_id, claim: input.claim, emission_anchor: input.emission_anchor, evidence: input.evidence };
  const joint = await jointDigest({ ...base, trace_digest: execution });
  const unchecked: EcReceipt = { ...base, execution_digest: execution, joint_digest: joint!, integrity: { valid: true, reasons: ["OK"] } };
  const check = await verifyEcReceipt(unchecked, input.corpus, input.events);
  return { ...unchecked, integrity: { valid: check.valid, reasons: check.reasons.filter((x) => !x.startsWith("SUPPORT_")) } };
}

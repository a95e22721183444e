/**
 * EC-Agent receipts: a claim bound to the exact spans it cites and to the exact ordered trace
 * that produced it. Integrity (this file) decides validity; the support plane only reports,
 * and only on text the integrity checks have verified.
 */
import { SHA256_REF } from "../encoding.js";
import { asciiCanonical, DOMAINS, domainDigest } from "./canonical.js";
import { corpusDigest, type Corpus } from "./corpus.js";
import { checkEvidence, CorpusMemo, type EvidenceProperty, type EvidenceRef, type EvidenceReason } from "./evidence.js";
import { EC_SCHEMA_VERSION, executionDigest, OBSERVING_TYPES, traceProblems, type EventReason, type TraceEvent } from "./events.js";
import { claimWithin, EcLimitError, type EcLimits } from "./limits.js";
import { lexicalSupport, prepareSpan, type LexicalReason, type LexicalResult, type PreparedSpan } from "./support.js";
import { containsText } from "./text.js";

export interface EcReceipt {
  schema_version: string;
  policy_id: string;
  run_id: string;
  corpus_digest: string;
  claim_id: string;
  claim: string;
  /**
   * Index of the committed event that emitted the claim: its claim_emission event, or the
   * answer event itself when the claim is taken from the answer.
   */
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
  "INVALID_REFERENCE",
  "OFFSET_NOT_INTEGER",
  "OFFSET_NEGATIVE",
  "OFFSET_REVERSED",
  "SOURCE_UNKNOWN",
  "OFFSET_OUT_OF_RANGE",
  "CORPUS_DIGEST_MISMATCH",
  "SOURCE_VERSION_MISMATCH",
  "SOURCE_REVOKED",
  "SOURCE_UNAUTHORIZED",
  "ACCESS_STATE_MISMATCH",
  "QUOTE_MISMATCH",
  "SPAN_HASH_MISMATCH",
  "EVENT_SCHEMA_INVALID",
  "EVENT_ACTION_TYPE_INVALID",
  "EVENT_DUPLICATE_ACTION_ID",
  "EVENT_NO_ANSWER",
  "EXECUTION_DIGEST_MISMATCH",
  "ANCHOR_MISMATCH",
  "OBSERVATION_MISMATCH",
  "JOINT_DIGEST_MISMATCH",
] as const;
export type IntegrityReason = (typeof INTEGRITY_REASONS)[number];

/** The support reason when the cited text was not verified, so support was not computed. */
export const SUPPORT_NOT_EVALUATED = "SUPPORT_NOT_EVALUATED";
export type SupportReason = LexicalReason | typeof SUPPORT_NOT_EVALUATED;

/**
 * Each property the verifier checks, by name. All are on in every verification; the audit's
 * ablation turns exactly one off to see which mutations it alone stops.
 */
export const INTEGRITY_PROPERTIES = [
  "evidence_presence",
  "reference",
  "offsets",
  "corpus_digest",
  "version",
  "access",
  "quote",
  "hash",
  "event_schema",
  "execution_digest",
  "anchor",
  "observation",
  "joint_digest",
] as const;
export type IntegrityProperty = (typeof INTEGRITY_PROPERTIES)[number];

export interface Finding {
  reason: IntegrityReason;
  detail: string;
  evidence?: number;
  event?: number;
}

export interface EcVerification {
  valid: boolean;
  /** Integrity reasons in check order, or ["OK"]; then the support reason (never affects `valid`). */
  reasons: (IntegrityReason | "OK" | SupportReason)[];
  findings: Finding[];
  recomputed: { corpus_digest: string; execution_digest: string | null; joint_digest: string | null };
  /** Lexical support over the verified spans; `evaluated: false` when any cited text failed verification. */
  support: { evaluated: boolean; lexical: LexicalResult[]; supported: boolean | null };
}

export interface VerifyOptions {
  /** The corpus digest when the caller already has it (bundle replay computes it once). */
  corpusDigest?: string;
  /** Properties left unchecked: only the audit's ablation sets this. */
  disabled?: ReadonlySet<IntegrityProperty>;
  /** Work shared by the verifications of one call over one corpus (bundle replay passes one). */
  memo?: VerifyMemo;
}

/**
 * A trace's receipt-independent facts, computed once per trace in a call: its schema problems,
 * the index of its answer, its execution digest (on demand) and, per document, the indices of
 * the events that observed it.
 */
export interface PreparedTrace {
  /**
   * The trace's schema problems as findings, in reason order (stably), with their distinct
   * reasons: every receipt verified over the trace reports them, and a row of receipts shares
   * them instead of mapping and sorting them again for each receipt.
   */
  findings: Finding[];
  reasons: ReadonlySet<IntegrityReason>;
  answer: number;
  execution(): Promise<string | null>;
  observations: Map<string, number[]>;
  /**
   * The `claim_emission` events before the answer, by claim id: the first one's index and the texts
   * they emitted, so a receipt's look-up costs one set query however many emissions a trace holds.
   */
  emissions: Map<string, { first: number; texts: Set<string | null> }>;
}

export function prepareTrace(events: unknown): PreparedTrace {
  const findings: Finding[] = traceProblems(events).map((p) => ({ reason: p.reason as EventReason, detail: p.detail, event: p.index }));
  findings.sort(byReason);
  const list = Array.isArray(events) ? (events as TraceEvent[]) : [];
  const isEvent = (e: unknown): e is TraceEvent => e !== null && typeof e === "object";
  const observations = new Map<string, number[]>();
  list.forEach((e, i) => {
    if (!isEvent(e) || typeof e.doc_id !== "string" || !OBSERVING_TYPES.includes(e.action_type)) return;
    const at = observations.get(e.doc_id);
    if (at) at.push(i);
    else observations.set(e.doc_id, [i]);
  });
  const answer = list.findIndex((e) => isEvent(e) && e.action_type === "answer");
  const emissions = new Map<string, { first: number; texts: Set<string | null> }>();
  list.forEach((e, i) => {
    if (i >= answer || !isEvent(e) || e.action_type !== "claim_emission" || typeof e.claim_id !== "string") return;
    const at = emissions.get(e.claim_id);
    if (at) at.texts.add(e.output);
    else emissions.set(e.claim_id, { first: i, texts: new Set([e.output]) });
  });
  let execution: Promise<string | null> | null = null;
  return {
    findings,
    reasons: new Set(findings.map((f) => f.reason)),
    answer,
    execution: () => (execution ??= executionDigestOrNull(list)),
    observations,
    emissions,
  };
}

/**
 * What one call shares between its verifications: the corpus memo, each trace's prepared facts
 * (by the events array), each verified span's support preparation, and the caps when the call
 * came over HTTP.
 */
export class VerifyMemo {
  readonly corpusMemo: CorpusMemo;
  private readonly traces = new WeakMap<object, PreparedTrace>();
  private readonly spans = new Map<string, PreparedSpan>();
  constructor(
    readonly corpus: Corpus,
    readonly limits: EcLimits | null = null,
  ) {
    this.corpusMemo = new CorpusMemo(corpus, limits);
  }
  trace(events: unknown): PreparedTrace {
    if (this.limits && Array.isArray(events) && events.length > this.limits.events_per_trace) {
      throw new EcLimitError("events_per_trace", `a trace has ${events.length} events; at most ${this.limits.events_per_trace} are verified in one call`);
    }
    if (events === null || typeof events !== "object") return prepareTrace(events);
    return this.traces.get(events) ?? (this.traces.set(events, prepareTrace(events)), this.traces.get(events)!);
  }
  span(text: string): PreparedSpan {
    return this.spans.get(text) ?? (this.spans.set(text, prepareSpan(text)), this.spans.get(text)!);
  }
  /** Whether an answer's text contains a claim, by answer, then claim: a pair met again in this call is not scanned again. */
  private readonly inAnswers = new Map<string, Map<string, boolean>>();
  private answerScanned = 0;
  /**
   * Whether `answer` contains `claim` (a final-only receipt anchored on its answer), once per
   * distinct pair in a call; what those scans read is counted against `answer_scan_code_units`.
   */
  answerContains(answer: string, claim: string): boolean {
    let byAnswer = this.inAnswers.get(answer);
    if (!byAnswer) this.inAnswers.set(answer, (byAnswer = new Map()));
    const known = byAnswer.get(claim);
    if (known !== undefined) return known;
    if (this.limits && (this.answerScanned += answer.length) > this.limits.answer_scan_code_units) {
      throw new EcLimitError("answer_scan_code_units", `finding claims in the answers they are anchored to would read more than ${this.limits.answer_scan_code_units} code units in one call`);
    }
    const found = containsText(answer, claim);
    byAnswer.set(claim, found);
    return found;
  }
  /** Lexical results by claim, then span text: a claim judged against a span it met before in this call is not scanned again. */
  private readonly lexicals = new Map<string, Map<string, LexicalResult>>();
  private scanned = 0;
  /**
   * The lexical predicate of `claim` over `span`, once per distinct pair in a call. Each new pair
   * scans the span for the claim; what those scans read is counted against `support_scan_code_units`.
   */
  lexical(claim: string, span: string, preparedClaim: () => PreparedSpan): LexicalResult {
    let byClaim = this.lexicals.get(claim);
    if (!byClaim) this.lexicals.set(claim, (byClaim = new Map()));
    const known = byClaim.get(span);
    if (known) return known;
    if (this.limits && (this.scanned += span.length) > this.limits.support_scan_code_units) {
      throw new EcLimitError("support_scan_code_units", `judging claims against their cited spans would read more than ${this.limits.support_scan_code_units} code units in one call`);
    }
    const result = lexicalSupport(claim, span, undefined, this.span(span), preparedClaim());
    byClaim.set(span, result);
    return result;
  }
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
  // One canonical pass: testing the evidence before the digest canonicalised it twice. Only when
  // the digest fails is the evidence tried alone, to tell its failure (null) from another's.
  try {
    return await domainDigest(DOMAINS.joint, input);
  } catch (err) {
    try {
      asciiCanonical(input.evidence);
    } catch {
      return null;
    }
    throw err;
  }
}

/** Why `event` is not the committed emission of this claim, or null. */
function anchorProblem(trace: TraceEvent[], prepared: PreparedTrace, r: EcReceipt, memo: VerifyMemo): string | null {
  const { answer } = prepared;
  const at = trace[r.emission_anchor];
  if (!at) return `there is no event ${r.emission_anchor}`;
  if (answer < 0 || r.emission_anchor > answer) return `event ${r.emission_anchor} is after the answer, outside the committed prefix`;
  if (at.action_type === "claim_emission") {
    if (at.claim_id !== r.claim_id || at.output !== r.claim) return `event ${r.emission_anchor} emits another claim`;
    return null;
  }
  if (at.action_type === "answer") {
    if (at.claim_id !== null && at.claim_id !== r.claim_id) return `the answer event names claim ${at.claim_id}`;
    // A claim id the run emitted at its own claim_emission event (before the answer) names the text
    // emitted there: a receipt anchored on the answer under that id must claim that text, else it
    // would stand for another sentence of the answer under the id, and cover that claim in a replay.
    const emitted = prepared.emissions.get(r.claim_id);
    if (emitted && !emitted.texts.has(r.claim)) return `claim ${r.claim_id} was emitted at event ${emitted.first} as other text; the answer does not emit it as this claim`;
    if (r.claim === "" || !memo.answerContains(at.output ?? "", r.claim)) return "the claim is not part of the answer it is anchored to";
    return null;
  }
  return `event ${r.emission_anchor} is a ${at.action_type}, which emits no claim`;
}

/**
 * Why a reference's recorded version or access is not what the run observed of its document
 * (the last observation of that document at or before the anchor: a retrieval, an observation
 * or an access denial, each of which records the version it saw and the access decision it got),
 * or null.
 */
function observationProblem(trace: TraceEvent[], prepared: PreparedTrace, anchor: number, ref: EvidenceRef): string | null {
  const seen = prepared.observations.get(ref.doc_id) ?? [];
  // The last observing event at or before the anchor, by binary search over its indices.
  let [lo, hi] = [0, seen.length];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seen[mid] <= anchor) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return `the trace never observed ${ref.doc_id} before the claim`;
  const i = seen[lo - 1];
  const e = trace[i];
  if (e.doc_version !== ref.doc_version || e.access !== ref.access) return `event ${i} (${e.action_type}) observed ${ref.doc_id} at ${e.doc_version ?? "no version"} with access ${e.access ?? "none"}`;
  return null;
}

const NONE: ReadonlySet<IntegrityProperty> = new Set();

/**
 * The verifier: the receipt against the corpus map and the ordered events. Every check runs;
 * `valid` holds only when none found anything. An absent evidence set is never valid. Support
 * is computed only when every cited span's text is verified (quote and hash), else it is
 * reported as not evaluated.
 */
export async function verifyEcReceipt(receipt: unknown, corpus: Corpus, events: unknown, options: VerifyOptions = {}): Promise<EcVerification> {
  const disabled = options.disabled ?? NONE;
  const on = (p: IntegrityProperty) => !disabled.has(p);
  const findings: Finding[] = [];
  const recomputedCorpus = options.corpusDigest ?? (await corpusDigest(corpus));
  const problem = schemaProblem(receipt);
  if (problem) {
    return {
      valid: false,
      reasons: ["SCHEMA_INVALID", SUPPORT_NOT_EVALUATED],
      findings: [{ reason: "SCHEMA_INVALID", detail: problem }],
      recomputed: { corpus_digest: recomputedCorpus, execution_digest: null, joint_digest: null },
      support: { evaluated: false, lexical: [], supported: null },
    };
  }
  const r = receipt as EcReceipt;
  const memo = options.memo && options.memo.corpus === corpus ? options.memo : new VerifyMemo(corpus);
  if (memo.limits && r.evidence.length > memo.limits.evidence_per_receipt) {
    throw new EcLimitError("evidence_per_receipt", `a receipt cites ${r.evidence.length} evidence references; at most ${memo.limits.evidence_per_receipt} are verified`);
  }
  if (memo.limits) claimWithin(r.claim, memo.limits);
  const prepared = memo.trace(events);
  if (on("evidence_presence") && r.evidence.length === 0) findings.push({ reason: "EVIDENCE_EMPTY", detail: "a receipt must cite at least one span" });
  if (on("corpus_digest") && recomputedCorpus !== r.corpus_digest) findings.push({ reason: "CORPUS_DIGEST_MISMATCH", detail: "the corpus is not the one the receipt was issued over" });

  const verified: (string | null)[] = [];
  const stopped: boolean[] = [];
  for (const [i, ref] of r.evidence.entries()) {
    const check = await checkEvidence(ref, i, corpus, memo.corpusMemo, disabled as ReadonlySet<EvidenceProperty>);
    for (const f of check.findings) findings.push({ reason: f.reason as EvidenceReason, detail: f.detail, evidence: f.evidence });
    verified.push(check.verified);
    stopped.push(check.stopped === true);
  }

  let execution: string | null = null;
  // The trace's own findings are worked out once per trace (prepareTrace) and merged in below: a
  // row's receipts each mapping, spreading and sorting them cost receipts × problems, and a spread
  // of some 10^5 of them overflowed the stack.
  const traceChecked = !(Array.isArray(events) && !on("event_schema"));
  const eventFindings = traceChecked ? prepared.findings : [];
  if (eventFindings.length === 0) {
    const trace = events as TraceEvent[];
    execution = await prepared.execution();
    if (execution === null) findings.push({ reason: "EVENT_NO_ANSWER", detail: "the trace has no answer event" });
    else if (on("execution_digest") && execution !== r.execution_digest) findings.push({ reason: "EXECUTION_DIGEST_MISMATCH", detail: "the trace through the answer is not the one the receipt was issued for" });
    const anchor = on("anchor") ? anchorProblem(trace, prepared, r, memo) : null;
    if (anchor) findings.push({ reason: "ANCHOR_MISMATCH", detail: anchor, event: r.emission_anchor });
    if (on("observation")) {
      for (const [i, ref] of r.evidence.entries()) {
        // Like steps 4–6, the observation check runs for every reference that did not stop at steps 1–3.
        if (stopped[i]) continue;
        const seen = observationProblem(trace, prepared, r.emission_anchor, ref);
        if (seen) findings.push({ reason: "OBSERVATION_MISMATCH", detail: seen, evidence: i });
      }
    }
  }

  const joint = await jointDigest({ ...pickJoint(r), trace_digest: execution ?? r.execution_digest });
  if (on("joint_digest") && joint !== r.joint_digest) findings.push({ reason: "JOINT_DIGEST_MISMATCH", detail: "the joint digest does not bind this claim, anchor, evidence, run, policy, corpus and trace" });

  findings.sort(byReason);
  const own = new Set(findings.map((f) => f.reason));
  const integrity = INTEGRITY_REASONS.filter((reason) => own.has(reason) || (traceChecked && prepared.reasons.has(reason)));
  const evaluated = verified.length > 0 && verified.every((v) => v !== null);
  let claimPrepared: PreparedSpan | undefined;
  const lexical = evaluated ? verified.map((span) => memo.lexical(r.claim, span!, () => (claimPrepared ??= prepareSpan(r.claim)))) : [];
  const supported = evaluated ? lexical.some((l) => l.supported) : null;
  const supportReason: SupportReason = !evaluated
    ? SUPPORT_NOT_EVALUATED
    : (lexical.find((l) => l.supported)?.reason ?? lexical.find((l) => l.reason === "SUPPORT_LEXICAL_NONE")?.reason ?? "SUPPORT_EMPTY");
  let all: Finding[] | undefined;
  return {
    valid: integrity.length === 0,
    reasons: [...(integrity.length ? integrity : (["OK"] as const)), supportReason],
    // The trace's findings are merged in when first read: a bundle's replay reads the reasons only.
    get findings() {
      return (all ??= eventFindings.length > 0 ? mergeByReason(findings, eventFindings) : findings);
    },
    recomputed: { corpus_digest: recomputedCorpus, execution_digest: execution, joint_digest: joint },
    support: { evaluated, lexical, supported },
  };
}

const reasonOrder = (f: Finding) => INTEGRITY_REASONS.indexOf(f.reason);
const byReason = (a: Finding, b: Finding) => reasonOrder(a) - reasonOrder(b);

/**
 * A receipt's own findings and its trace's, both in reason order, as one list in reason order,
 * stably (on a tie the receipt's own finding first, as it was found first): one pass over both.
 */
function mergeByReason(own: Finding[], trace: Finding[]): Finding[] {
  const out: Finding[] = [];
  let j = 0;
  for (const f of own) {
    while (j < trace.length && byReason(trace[j], f) < 0) out.push(trace[j++]);
    out.push(f);
  }
  while (j < trace.length) out.push(trace[j++]);
  return out;
}

/** The execution digest, or null when there is no answer or (schema check off) no canonical form. */
async function executionDigestOrNull(trace: TraceEvent[]): Promise<string | null> {
  try {
    return await (executionDigest(trace) ?? null);
  } catch {
    return null;
  }
}

/** Integrity reasons only: what a receipt records and replay compares. */
export const integrityReasons = (v: EcVerification): string[] => v.reasons.filter((x) => !x.startsWith("SUPPORT_"));

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
  return { ...unchecked, integrity: { valid: check.valid, reasons: integrityReasons(check) } };
}

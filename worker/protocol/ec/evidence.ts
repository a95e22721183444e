/**
 * Evidence references: a declared span of an immutable source, by half-open code-point
 * offsets, with the SHA-256 of its UTF-8 bytes, the exact quote when one was emitted, and the
 * document version and access decision the run observed.
 */
import { sha256Hex } from "../digest.js";
import { HEX64, SHA256_REF } from "../encoding.js";
import { ACCESS_STATES, versionOf, type Access, type Corpus } from "./corpus.js";
import { EcLimitError, type EcLimits } from "./limits.js";
import { codePoints } from "./text.js";

export interface EvidenceRef {
  doc_id: string;
  span_id: string;
  start: number;
  end: number;
  text_sha256: string;
  /** The exact quoted text, when the policy emitted one; checked only when present. */
  quote?: string;
  /** The content hash of the document version the run observed. */
  doc_version: string;
  /** The access decision the run observed for the document. */
  access: Access;
}

export type EvidenceReason =
  | "SCHEMA_INVALID"
  | "INVALID_REFERENCE"
  | "OFFSET_NOT_INTEGER"
  | "OFFSET_NEGATIVE"
  | "OFFSET_REVERSED"
  | "SOURCE_UNKNOWN"
  | "OFFSET_OUT_OF_RANGE"
  | "SOURCE_VERSION_MISMATCH"
  | "SOURCE_REVOKED"
  | "SOURCE_UNAUTHORIZED"
  | "ACCESS_STATE_MISMATCH"
  | "QUOTE_MISMATCH"
  | "SPAN_HASH_MISMATCH";

/** The properties a reference is checked for; the audit's ablation disables one at a time. */
export type EvidenceProperty = "reference" | "offsets" | "version" | "access" | "quote" | "hash";

export interface EvidenceFinding {
  reason: EvidenceReason;
  evidence: number;
  detail: string;
}

export interface EvidenceCheck {
  findings: EvidenceFinding[];
  /** The selected text, only once the quote (when emitted) and the hash have verified it. */
  verified: string | null;
  /** Set when the reference stopped at steps 1–3 (form, identity, offsets, document, range): nothing could be selected. */
  stopped?: true;
}

const REF_FIELDS = new Set(["doc_id", "span_id", "start", "end", "text_sha256", "quote", "doc_version", "access"]);
const NONE: ReadonlySet<EvidenceProperty> = new Set();

/**
 * What one call works out about its corpus, once: each document's code points and content hash,
 * and each selected span's text and SHA-256. A receipt citing one document a thousand times
 * hashes it once; a bundle's receipts share it. With `limits` it refuses (EcLimitError) to
 * select more distinct cited text than `limits.cited_code_points`.
 */
export class CorpusMemo {
  private readonly cps = new Map<string, string[]>();
  private readonly versions = new Map<string, Promise<string>>();
  private readonly spans = new Map<string, { text: string; sha256: Promise<string> }>();
  private cited = 0;
  constructor(
    readonly corpus: Corpus,
    readonly limits: EcLimits | null = null,
  ) {}
  points(docId: string): string[] {
    return this.cps.get(docId) ?? this.cps.set(docId, codePoints(this.corpus[docId].text)).get(docId)!;
  }
  version(docId: string): Promise<string> {
    return this.versions.get(docId) ?? this.versions.set(docId, versionOf(this.corpus[docId].text)).get(docId)!;
  }
  /** The text `[s, e)` of a document selects (offsets already checked in range) and its SHA-256. */
  selected(docId: string, s: number, e: number): { text: string; sha256: Promise<string> } {
    const key = `${docId}\u0000${s}\u0000${e}`;
    const known = this.spans.get(key);
    if (known) return known;
    const size = Math.max(0, e - s) || 0;
    if (this.limits && this.cited + size > this.limits.cited_code_points) {
      throw new EcLimitError("cited_code_points", `the cited spans select more than ${this.limits.cited_code_points} code points of distinct text in one call`);
    }
    this.cited += size;
    const text = this.points(docId).slice(s, e).join("");
    const span = { text, sha256: sha256Hex(text) };
    this.spans.set(key, span);
    return span;
  }
}

/** A fresh per-call memo over a corpus (the name is older than the memo: it began as the code-point cache). */
export const codePointIndex = (corpus: Corpus, limits: EcLimits | null = null): CorpusMemo => new CorpusMemo(corpus, limits);

/**
 * Checks one reference against the corpus; `index` names it in the findings. Order: form;
 * reference identity (document and span ids present); offsets as integers in order; the
 * document; offsets in range; the span declared with these offsets; source state (version,
 * access); quote; hash. A failure of form, identity, offsets, document or range stops the
 * reference there (there is no span to select); the declared-span, source-state, quote and hash
 * checks all run and all report, so one reference can carry several of their codes.
 */
export async function checkEvidence(value: unknown, index: number, corpus: Corpus, memo: CorpusMemo, disabled: ReadonlySet<EvidenceProperty> = NONE): Promise<EvidenceCheck> {
  const findings: EvidenceFinding[] = [];
  const note = (reason: EvidenceReason, detail: string) => findings.push({ reason, evidence: index, detail });
  const fail = (reason: EvidenceReason, detail: string): EvidenceCheck => (note(reason, detail), { findings, verified: null, stopped: true });
  const on = (p: EvidenceProperty) => !disabled.has(p);
  if (value === null || typeof value !== "object" || Array.isArray(value)) return fail("SCHEMA_INVALID", "an evidence reference must be an object");
  const ref = value as Record<string, unknown>;
  for (const key of Object.keys(ref)) if (!REF_FIELDS.has(key)) return fail("SCHEMA_INVALID", `unknown field ${JSON.stringify(key)}`);
  if (typeof ref.text_sha256 !== "string" || !HEX64.test(ref.text_sha256)) return fail("SCHEMA_INVALID", "text_sha256 must be 64 lowercase hex");
  if (ref.quote !== undefined && typeof ref.quote !== "string") return fail("SCHEMA_INVALID", "quote, when emitted, must be a string");
  if (typeof ref.doc_version !== "string" || !SHA256_REF.test(ref.doc_version)) return fail("SCHEMA_INVALID", 'doc_version must be the observed content hash, "sha256:" + 64 lowercase hex');
  if (!ACCESS_STATES.includes(ref.access as Access)) return fail("SCHEMA_INVALID", `access must be the observed decision, one of ${ACCESS_STATES.join(", ")}`);
  if (typeof ref.doc_id !== "string" || ref.doc_id === "") return fail("INVALID_REFERENCE", "the document identifier is missing");
  if (typeof ref.span_id !== "string" || ref.span_id === "") return fail("INVALID_REFERENCE", "the span identifier is missing");
  const { start, end } = ref;
  if (on("offsets")) {
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return fail("OFFSET_NOT_INTEGER", "start and end must be integers");
    if ((start as number) < 0 || (end as number) < 0) return fail("OFFSET_NEGATIVE", `offsets ${start}..${end} are negative`);
    if ((end as number) < (start as number)) return fail("OFFSET_REVERSED", `end ${end} is before start ${start}`);
  }
  const [s, e] = [Number(start), Number(end)];
  if (!Object.hasOwn(corpus, ref.doc_id)) return fail("SOURCE_UNKNOWN", `no document ${JSON.stringify(ref.doc_id)} in the corpus`);
  const doc = corpus[ref.doc_id];
  const points = memo.points(ref.doc_id);
  if (on("offsets") && e > points.length) return fail("OFFSET_OUT_OF_RANGE", `end ${e} is beyond the document's ${points.length} code points`);
  if (on("reference")) {
    const declared = doc.spans && Object.hasOwn(doc.spans, ref.span_id) ? doc.spans[ref.span_id] : undefined;
    if (!declared) note("INVALID_REFERENCE", `span ${JSON.stringify(ref.span_id)} is not declared for document ${ref.doc_id}`);
    else if (declared.start !== s || declared.end !== e) note("INVALID_REFERENCE", `span ${ref.span_id} is declared at ${declared.start}..${declared.end}, not ${s}..${e}`);
  }
  if (on("version")) {
    const now = await memo.version(ref.doc_id);
    if (ref.doc_version !== now) note("SOURCE_VERSION_MISMATCH", `the run observed version ${ref.doc_version}; the corpus holds ${now}`);
  }
  if (on("access")) {
    if (ref.access === "revoked") note("SOURCE_REVOKED", `the run cited document ${ref.doc_id} after its access was revoked`);
    if (ref.access === "unauthorized") note("SOURCE_UNAUTHORIZED", `the run cited document ${ref.doc_id} without authorisation`);
    const current = doc.access ?? "granted";
    if (current !== ref.access) note("ACCESS_STATE_MISMATCH", `the run observed access ${ref.access}; the corpus now says ${current}`);
  }
  const span = memo.selected(ref.doc_id, s, e);
  const selected = span.text;
  let textOk = true;
  if (on("quote") && ref.quote !== undefined && selected !== ref.quote) {
    textOk = false;
    note("QUOTE_MISMATCH", "the quote is not the text the offsets select");
  }
  if (on("hash") && (await span.sha256) !== ref.text_sha256) {
    textOk = false;
    note("SPAN_HASH_MISMATCH", "SHA-256 of the selected text is not text_sha256");
  }
  return { findings, verified: textOk ? selected : null };
}

/**
 * Builds a reference to a declared span (issuing side), recording the version and access state
 * the corpus shows now; `quote: false` leaves the optional quote out.
 */
export async function referenceTo(corpus: Corpus, docId: string, spanId: string, options: { quote?: boolean } = {}): Promise<EvidenceRef> {
  const doc = corpus[docId];
  const span = doc?.spans?.[spanId];
  if (!span) throw new Error(`span ${spanId} is not declared for ${docId}`);
  const text = codePoints(doc.text).slice(span.start, span.end).join("");
  return {
    doc_id: docId,
    span_id: spanId,
    start: span.start,
    end: span.end,
    text_sha256: await sha256Hex(text),
    ...(options.quote === false ? {} : { quote: text }),
    doc_version: await versionOf(doc.text),
    access: doc.access ?? "granted",
  };
}

/** Declares a span over the first occurrence of `quote` in `text` (fixtures, tests). */
export function declareSpan(text: string, quote: string): { start: number; end: number } {
  const at = text.indexOf(quote);
  if (at < 0) throw new Error(`quote not found: ${quote}`);
  const start = codePoints(text.slice(0, at)).length;
  return { start, end: start + codePoints(quote).length };
}

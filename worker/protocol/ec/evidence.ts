/**
 * Evidence references: a span of an immutable source, by half-open code-point offsets, with
 * the exact quote and the SHA-256 of its UTF-8 bytes.
 */
import { sha256Hex } from "../digest.js";
import { HEX64 } from "../encoding.js";
import type { Corpus } from "./corpus.js";
import { codePoints } from "./text.js";

export interface EvidenceRef {
  doc_id: string;
  span_id: string;
  start: number;
  end: number;
  text_sha256: string;
  quote: string;
  doc_version?: string;
}

export type EvidenceReason =
  | "SCHEMA_INVALID"
  | "SOURCE_UNKNOWN"
  | "SOURCE_REVOKED"
  | "SOURCE_UNAUTHORIZED"
  | "SOURCE_VERSION_MISMATCH"
  | "OFFSET_NOT_INTEGER"
  | "OFFSET_NEGATIVE"
  | "OFFSET_REVERSED"
  | "OFFSET_EMPTY"
  | "OFFSET_OUT_OF_RANGE"
  | "QUOTE_MISMATCH"
  | "SPAN_HASH_MISMATCH";

export interface EvidenceFinding {
  reason: EvidenceReason;
  evidence: number;
  detail: string;
}

export interface EvidenceCheck {
  findings: EvidenceFinding[];
  /** The text the offsets select, when they select any. */
  selected: string | null;
}

const REF_FIELDS = new Set(["doc_id", "span_id", "start", "end", "text_sha256", "quote", "doc_version"]);

/** Splits each document into code points once per verification. */
export function codePointIndex(corpus: Corpus): (docId: string) => string[] {
  const cache = new Map<string, string[]>();
  return (docId) => cache.get(docId) ?? cache.set(docId, codePoints(corpus[docId].text)).get(docId)!;
}

/** Checks one reference against the corpus; `index` names it in the findings. */
export async function checkEvidence(value: unknown, index: number, corpus: Corpus, cps: (docId: string) => string[]): Promise<EvidenceCheck> {
  const findings: EvidenceFinding[] = [];
  const fail = (reason: EvidenceReason, detail: string): EvidenceCheck => (findings.push({ reason, evidence: index, detail }), { findings, selected: null });
  if (value === null || typeof value !== "object" || Array.isArray(value)) return fail("SCHEMA_INVALID", "an evidence reference must be an object");
  const ref = value as Record<string, unknown>;
  for (const key of Object.keys(ref)) if (!REF_FIELDS.has(key)) return fail("SCHEMA_INVALID", `unknown field ${JSON.stringify(key)}`);
  if (typeof ref.doc_id !== "string" || ref.doc_id === "" || typeof ref.span_id !== "string" || ref.span_id === "") return fail("SCHEMA_INVALID", "doc_id and span_id must be non-empty strings");
  if (typeof ref.quote !== "string" || typeof ref.text_sha256 !== "string" || !HEX64.test(ref.text_sha256)) return fail("SCHEMA_INVALID", "quote must be a string and text_sha256 64 lowercase hex");
  if (ref.doc_version !== undefined && typeof ref.doc_version !== "string") return fail("SCHEMA_INVALID", "doc_version must be a string");
  const { start, end } = ref;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return fail("OFFSET_NOT_INTEGER", "start and end must be integers");
  const [s, e] = [start as number, end as number];
  if (s < 0 || e < 0) return fail("OFFSET_NEGATIVE", `offsets ${s}..${e} are negative`);
  if (e < s) return fail("OFFSET_REVERSED", `end ${e} is before start ${s}`);
  if (e === s) return fail("OFFSET_EMPTY", `the span ${s}..${e} is empty`);
  const doc = corpus[ref.doc_id];
  if (!Object.hasOwn(corpus, ref.doc_id) || !doc) return fail("SOURCE_UNKNOWN", `no document ${JSON.stringify(ref.doc_id)} in the corpus`);
  if (doc.access === "revoked") findings.push({ reason: "SOURCE_REVOKED", evidence: index, detail: `document ${ref.doc_id} has been revoked` });
  if (doc.access === "unauthorized") findings.push({ reason: "SOURCE_UNAUTHORIZED", evidence: index, detail: `document ${ref.doc_id} is not authorised for this verifier` });
  if (ref.doc_version !== undefined && ref.doc_version !== doc.version) {
    findings.push({ reason: "SOURCE_VERSION_MISMATCH", evidence: index, detail: `the receipt observed version ${ref.doc_version}, the corpus holds ${doc.version ?? "no version"}` });
  }
  const points = cps(ref.doc_id);
  if (e > points.length) return fail("OFFSET_OUT_OF_RANGE", `end ${e} is beyond the document's ${points.length} code points`);
  const selected = points.slice(s, e).join("");
  if (selected !== ref.quote) findings.push({ reason: "QUOTE_MISMATCH", evidence: index, detail: "the quote is not the text the offsets select" });
  if ((await sha256Hex(selected)) !== ref.text_sha256) findings.push({ reason: "SPAN_HASH_MISMATCH", evidence: index, detail: "SHA-256 of the selected text is not text_sha256" });
  return { findings, selected };
}

/** Builds a reference to the first occurrence of `quote` in a document (issuing side). */
export async function referenceTo(corpus: Corpus, docId: string, spanId: string, quote: string): Promise<EvidenceRef> {
  const doc = corpus[docId];
  const at = doc.text.indexOf(quote);
  if (at < 0) throw new Error(`quote not found in ${docId}: ${quote}`);
  const start = codePoints(doc.text.slice(0, at)).length;
  return {
    doc_id: docId,
    span_id: spanId,
    start,
    end: start + codePoints(quote).length,
    text_sha256: await sha256Hex(quote),
    quote,
    ...(doc.version !== undefined ? { doc_version: doc.version } : {}),
  };
}

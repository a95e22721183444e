/**
 * The corpus a run read from: the fixed set of documents and spans, by document id. Each
 * document has its immutable text, the spans that may be cited from it (id and half-open
 * code-point offsets) and the access state a verifier sees now. A document's version is its
 * content hash, never a free-form label.
 */
import { sha256Hex } from "../digest.js";
import { EcLimitError, type EcLimits } from "./limits.js";
import { SHA256_REF } from "../encoding.js";
import { compareCodePoints, DOMAINS, domainDigest } from "./canonical.js";
import { codePoints } from "./text.js";

export const ACCESS_STATES = ["granted", "revoked", "unauthorized"] as const;
export type Access = (typeof ACCESS_STATES)[number];

export interface DeclaredSpan {
  start: number;
  end: number;
}

export interface CorpusDocument {
  text: string;
  /** The spans that may be cited, by span id. A reference to any other span is invalid. */
  spans?: Record<string, DeclaredSpan>;
  /** When stated, must be the content hash `versionOf(text)`. */
  version?: string;
  /** Access state now; granted when absent. */
  access?: Access;
}

export type Corpus = Record<string, CorpusDocument>;

/** A document version: `sha256:` + hex SHA-256 of the UTF-8 text. */
export const versionOf = async (text: string): Promise<string> => "sha256:" + (await sha256Hex(text));

const DOC_FIELDS = ["text", "spans", "version", "access"];

/**
 * Why a value is not a corpus, or null. Checks the declared spans against their texts. With
 * `limits`, a corpus of more documents than the cap is refused (EcLimitError) before any is hashed.
 */
export async function corpusProblem(value: unknown, limits?: Pick<EcLimits, "corpus_documents"> | null): Promise<string | null> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "corpus must be an object of documents by doc_id";
  if (limits) {
    const count = Object.keys(value).length;
    if (count > limits.corpus_documents) throw new EcLimitError("corpus_documents", `the corpus has ${count} documents; at most ${limits.corpus_documents} are read in one call`);
  }
  for (const [id, doc] of Object.entries(value)) {
    const at = `corpus[${JSON.stringify(id)}]`;
    if (id === "") return "a doc_id must be a non-empty string";
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return `${at} must be an object`;
    const d = doc as Record<string, unknown>;
    for (const key of Object.keys(d)) if (!DOC_FIELDS.includes(key)) return `${at} has unknown field ${JSON.stringify(key)}`;
    if (typeof d.text !== "string") return `${at}.text must be a string`;
    if (d.version !== undefined && (typeof d.version !== "string" || !SHA256_REF.test(d.version) || d.version !== (await versionOf(d.text)))) {
      return `${at}.version, when stated, must be the content hash of its text ("sha256:" + SHA-256 of the UTF-8 text)`;
    }
    if (d.access !== undefined && !ACCESS_STATES.includes(d.access as Access)) return `${at}.access must be one of ${ACCESS_STATES.join(", ")}`;
    if (d.spans !== undefined) {
      if (d.spans === null || typeof d.spans !== "object" || Array.isArray(d.spans)) return `${at}.spans must be an object of {start, end} by span_id`;
      const length = codePoints(d.text).length;
      for (const [sid, span] of Object.entries(d.spans)) {
        const s = span as Record<string, unknown> | null;
        if (sid === "") return `${at}.spans: a span_id must be a non-empty string`;
        if (!s || typeof s !== "object" || Array.isArray(s) || Object.keys(s).some((k) => k !== "start" && k !== "end")) return `${at}.spans[${JSON.stringify(sid)}] must be {start, end}`;
        if (!Number.isSafeInteger(s.start) || !Number.isSafeInteger(s.end)) return `${at}.spans[${JSON.stringify(sid)}] offsets must be integers`;
        const [a, b] = [s.start as number, s.end as number];
        if (a < 0 || b < a || b > length) return `${at}.spans[${JSON.stringify(sid)}] must satisfy 0 <= start <= end <= ${length} (code points)`;
      }
    }
  }
  return null;
}

/**
 * The corpus manifest digest: over the corpus domain separator and the canonical list of
 * `{doc_id, version, spans}` sorted by doc_id, spans as `[span_id, start, end]` sorted by id.
 * Access is not part of it: a receipt records the access decision it observed, and a change
 * of access state is judged against that record with its own code.
 */
export async function corpusDigest(corpus: Corpus): Promise<string> {
  const ids = Object.keys(corpus).sort(compareCodePoints);
  const documents = await Promise.all(
    ids.map(async (doc_id) => ({
      doc_id,
      version: await versionOf(corpus[doc_id].text),
      spans: Object.entries(corpus[doc_id].spans ?? {})
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([span_id, s]) => [span_id, s.start, s.end]),
    })),
  );
  return domainDigest(DOMAINS.corpus, { documents });
}

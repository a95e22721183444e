/**
 * The corpus a run read from: immutable source texts by document id, with the version and the
 * access state a verifier sees now, and the manifest digest a receipt binds.
 */
import { sha256Hex } from "../digest.js";
import { DOMAINS, domainDigest } from "./canonical.js";

export type Access = "granted" | "revoked" | "unauthorized";

export interface CorpusDocument {
  text: string;
  version?: string;
  access?: Access;
}

export type Corpus = Record<string, CorpusDocument>;

/** Why a value is not a corpus, or null. */
export function corpusProblem(value: unknown): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "corpus must be an object of documents by doc_id";
  for (const [id, doc] of Object.entries(value)) {
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return `corpus[${JSON.stringify(id)}] must be an object`;
    const d = doc as Record<string, unknown>;
    for (const key of Object.keys(d)) if (!["text", "version", "access"].includes(key)) return `corpus[${JSON.stringify(id)}] has unknown field ${JSON.stringify(key)}`;
    if (typeof d.text !== "string") return `corpus[${JSON.stringify(id)}].text must be a string`;
    if (d.version !== undefined && typeof d.version !== "string") return `corpus[${JSON.stringify(id)}].version must be a string`;
    if (d.access !== undefined && !["granted", "revoked", "unauthorized"].includes(d.access as string)) return `corpus[${JSON.stringify(id)}].access must be granted, revoked or unauthorized`;
  }
  return null;
}

/**
 * The corpus manifest digest: over the corpus domain separator and the canonical list of
 * `{doc_id, text_sha256, version}` sorted by doc_id. Access is not part of it: it is judged
 * at verification time and has reason codes of its own.
 */
export async function corpusDigest(corpus: Corpus): Promise<string> {
  const ids = Object.keys(corpus).sort();
  const documents = await Promise.all(ids.map(async (doc_id) => ({ doc_id, text_sha256: await sha256Hex(corpus[doc_id].text), version: corpus[doc_id].version ?? null })));
  return domainDigest(DOMAINS.corpus, { documents });
}

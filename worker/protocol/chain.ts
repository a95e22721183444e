/**
 * Evidence chains (CCS §11): hops of receipts linked by receipt hashes and sealed by a summary
 * hash, verified in full or at one spot. Pure: runs offline under plain Node (the CLI) with
 * whatever anchors and verifier it is given.
 */
import type { PinnedIssuer } from "./anchors.js";
import { failure, type Failure, type FailureCode } from "./codes.js";
import { jcs, sha256, SHA256_PREFIX } from "./digest.js";
import type { SignatureVerifier } from "./ed25519.js";
import { fromHex, SHA256_REF, toHex } from "./encoding.js";
import { isJsonObject as isObject } from "./strict-json.js";
import { canonicalReceipt, parseReceipt, type Receipt } from "./receipt.js";
import { checkFreshness, type FreshnessPolicy } from "./checks/freshness.js";
import { checkSignature } from "./checks/signature.js";

/** A chain holds at most this many hops (hop_count 0 … 15). */
export const MAX_CHAIN_HOPS = 16;
/** Documents longer than this are refused before any work. */
export const MAX_CHAIN_ENTRIES = 64;

export interface KeptEntry {
  hop_count: number;
  previous_receipt_hash?: string | null;
  receipt: Record<string, unknown>;
}
export interface PrunedEntry {
  hop_count: number;
  receipt_hash: string;
  pruned: true;
}
export type ChainEntry = KeptEntry | PrunedEntry;

export interface ChainDocument {
  chain_id: string;
  entries: ChainEntry[];
  summary_hash: string;
  total_hops: number;
}

export interface ChainFailure extends Failure {
  /** The hop the failure is at; for the summary, the hop where the sealed chain stops matching. */
  hop: number;
}

export interface ChainVerdict {
  chain_id: string;
  chain_valid: boolean;
  broken_at_hop: number | null;
  failures: ChainFailure[];
  /** The summary hash recomputed from the entries. */
  summary_hash: string;
  total_hops: number;
  mode: "full" | "spot";
  /** The hops whose receipts had their signatures checked. */
  verified_hops: number[];
}

export interface ChainOptions {
  /** Verify only this hop, its link and the summary hash. */
  spot?: number;
  /** Judge each verified receipt's freshness at `now` (off by default: chains are audited late). */
  checkFreshness?: boolean;
  now: number;
  policy: FreshnessPolicy;
}

export interface ChainDeps {
  anchors(issuer: string): Promise<PinnedIssuer | null>;
  verifier: SignatureVerifier;
  /** Fingerprints of an issuer's revoked keys; offline verifiers without a ledger may omit it. */
  revokedKeys?(issuer: string): Promise<Set<string>>;
}

export type ChainParse = { ok: true; chain: ChainDocument } | { ok: false; detail: string };

export const CHAIN_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const isHop = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** One entry's form, or why it is not an entry. */
export function entryProblem(e: unknown): string | null {
  if (!isObject(e)) return "must be an object";
  if (!isHop(e.hop_count)) return "hop_count must be an integer >= 0";
  if (e.pruned !== undefined) {
    if (e.pruned !== true || Object.keys(e).length !== 3 || typeof e.receipt_hash !== "string" || !SHA256_REF.test(e.receipt_hash)) {
      return "a pruned entry is exactly {hop_count, receipt_hash, pruned: true}";
    }
    return null;
  }
  for (const key of Object.keys(e)) if (!["hop_count", "previous_receipt_hash", "receipt"].includes(key)) return `unknown field ${JSON.stringify(key)}`;
  if (!isObject(e.receipt)) return "receipt must be an object";
  const prev = e.previous_receipt_hash;
  if (prev !== undefined && prev !== null && (typeof prev !== "string" || !SHA256_REF.test(prev))) return 'previous_receipt_hash must be "sha256:" + 64 lowercase hex';
  return null;
}

export function parseChain(value: unknown): ChainParse {
  if (!isObject(value)) return { ok: false, detail: "chain must be an object" };
  for (const key of Object.keys(value)) if (!["chain_id", "entries", "summary_hash", "total_hops"].includes(key)) return { ok: false, detail: `unknown chain field ${JSON.stringify(key)}` };
  if (typeof value.chain_id !== "string" || !CHAIN_ID.test(value.chain_id)) return { ok: false, detail: "chain_id must be 1-128 of [A-Za-z0-9._:-]" };
  if (!Array.isArray(value.entries) || value.entries.length === 0) return { ok: false, detail: "entries must be a non-empty array" };
  if (value.entries.length > MAX_CHAIN_ENTRIES) return { ok: false, detail: `at most ${MAX_CHAIN_ENTRIES} entries are read` };
  if (typeof value.summary_hash !== "string" || !SHA256_REF.test(value.summary_hash)) return { ok: false, detail: 'summary_hash must be "sha256:" + 64 lowercase hex' };
  if (!isHop(value.total_hops)) return { ok: false, detail: "total_hops must be an integer >= 0" };
  for (const [i, e] of value.entries.entries()) {
    const problem = entryProblem(e);
    if (problem) return { ok: false, detail: `entries[${i}]: ${problem}` };
  }
  return { ok: true, chain: value as unknown as ChainDocument };
}

/** A kept receipt parsed and canonicalised once, for its digest and its checks alike. */
interface PreparedReceipt {
  parse: ReturnType<typeof parseReceipt>;
  signedBytes: Uint8Array | null;
  digest: Promise<Uint8Array>;
}

function prepare(receipt: Record<string, unknown>): PreparedReceipt {
  const parse = parseReceipt(receipt);
  const canonical = parse.ok ? canonicalReceipt(parse.receipt) : null;
  return { parse, signedBytes: canonical?.signedBytes ?? null, digest: sha256(canonical ? canonical.fullText : jcs(receipt)) };
}

/** The raw SHA-256 of a receipt's canonical form (signature included): receipt_hash without its prefix. */
export function receiptDigest(receipt: Record<string, unknown>): Promise<Uint8Array> {
  return prepare(receipt).digest;
}

export const receiptHashOf = (digest: Uint8Array): string => SHA256_PREFIX + toHex(digest);

/** `sha256:` + hex(SHA-256(raw receipt digests concatenated in insertion order)). */
export async function summaryHash(digests: Uint8Array[]): Promise<string> {
  const all = new Uint8Array(digests.length * 32);
  digests.forEach((d, i) => all.set(d, i * 32));
  return SHA256_PREFIX + toHex(await sha256(all));
}

export interface KeptReceiptCheck {
  receipt: Receipt | null;
  kid: string | null;
  failures: Failure[];
}

/** A kept receipt on its own: 22-field form, pinned issuer, signature, revocation, and freshness when asked. */
export function checkKeptReceipt(value: Record<string, unknown>, opts: KeptOptions, deps: ChainDeps): Promise<KeptReceiptCheck> {
  return checkPrepared(prepare(value), opts, deps);
}

type KeptOptions = { checkFreshness?: boolean; now: number; policy: FreshnessPolicy };

async function checkPrepared({ parse, signedBytes }: PreparedReceipt, opts: KeptOptions, deps: ChainDeps): Promise<KeptReceiptCheck> {
  if (!parse.ok) return { receipt: null, kid: null, failures: parse.failures };
  const r = parse.receipt;
  const failures: Failure[] = opts.checkFreshness ? checkFreshness(r, opts.now, opts.policy) : [];
  const pinned = await deps.anchors(r.issuer);
  // An archival check (no freshness) judges the key at issued_at only; otherwise its not_after also at `now`.
  const keyJudgedAt = opts.checkFreshness ? opts.now : r.issued_at;
  const signature = await checkSignature(r, signedBytes!, pinned?.keys ?? null, deps.verifier, keyJudgedAt);
  failures.push(...signature.failures);
  if (signature.fingerprint && deps.revokedKeys && (await deps.revokedKeys(r.issuer)).has(signature.fingerprint)) {
    failures.push(failure("ANCHOR_REVOKED", `key ${signature.kid} of ${r.issuer} has been revoked`));
  }
  return { receipt: r, kid: signature.kid, failures };
}

const at = (hop: number, code: FailureCode, detail: string): ChainFailure => ({ ...failure(code, detail), hop });

export async function verifyChain(chain: ChainDocument, opts: ChainOptions, deps: ChainDeps): Promise<ChainVerdict | { malformed: string }> {
  const { entries } = chain;
  const spot = opts.spot;
  if (spot !== undefined) {
    if (!isHop(spot) || spot >= entries.length) return { malformed: `spot must name a hop of the chain (0..${entries.length - 1})` };
    if ("pruned" in entries[spot]) return { malformed: `hop ${spot} is pruned: there is no receipt to verify there` };
  }
  const prepared = entries.map((e) => ("pruned" in e ? null : prepare(e.receipt)));
  const digests = await Promise.all(entries.map((e, i) => ("pruned" in e ? fromHex(e.receipt_hash.slice(7))! : prepared[i]!.digest)));
  const hashes = digests.map(receiptHashOf);
  const failures: ChainFailure[] = [];
  const verified: number[] = [];
  const linkHops = spot === undefined ? entries.map((_, i) => i) : [spot];
  for (const i of linkHops) {
    const e = entries[i];
    if (e.hop_count !== i) failures.push(at(i, "CHAIN_BROKEN", `entry ${i} says hop ${e.hop_count}: hops are numbered from 0 in order`));
    if ("pruned" in e) continue;
    const prev = e.previous_receipt_hash ?? null;
    if (i === 0 && prev !== null) failures.push(at(0, "CHAIN_BROKEN", "hop 0 names a predecessor that is not in the chain"));
    if (i > 0 && prev !== hashes[i - 1]) failures.push(at(i, "CHAIN_BROKEN", `hop ${i}'s previous_receipt_hash is not the receipt hash of hop ${i - 1}`));
    const kept = await checkPrepared(prepared[i]!, opts, deps);
    failures.push(...kept.failures.map((f) => ({ ...f, hop: i })));
    verified.push(i);
  }
  if (entries.length > MAX_CHAIN_HOPS) failures.push(at(MAX_CHAIN_HOPS, "HOP_LIMIT_EXCEEDED", `${entries.length} hops: a chain holds at most ${MAX_CHAIN_HOPS}`));
  const summary = await summaryHash(digests);
  const sealedAt = Math.min(chain.total_hops, entries.length) - (chain.total_hops === entries.length ? 1 : 0);
  if (chain.total_hops !== entries.length) failures.push(at(sealedAt, "CHAIN_BROKEN", `total_hops is ${chain.total_hops} but the chain has ${entries.length} hops`));
  if (summary !== chain.summary_hash) failures.push(at(Math.max(0, sealedAt), "CHAIN_BROKEN", "summary_hash does not match the receipts in the chain"));
  failures.sort((a, b) => a.hop - b.hop);
  return {
    chain_id: chain.chain_id,
    chain_valid: failures.length === 0,
    broken_at_hop: failures.length ? failures[0].hop : null,
    failures,
    summary_hash: summary,
    total_hops: entries.length,
    mode: spot === undefined ? "full" : "spot",
    verified_hops: verified,
  };
}

/** Builds a chain document from receipts (for issuers, the CLI and the vector generator). */
export async function buildChain(chainId: string, receipts: Record<string, unknown>[]): Promise<ChainDocument> {
  const digests = await Promise.all(receipts.map(receiptDigest));
  const entries: ChainEntry[] = receipts.map((receipt, i) => (i === 0 ? { hop_count: 0, receipt } : { hop_count: i, previous_receipt_hash: receiptHashOf(digests[i - 1]), receipt }));
  return { chain_id: chainId, entries, summary_hash: await summaryHash(digests), total_hops: entries.length };
}

/** Replaces kept hops by their pruned form; the chain stays verifiable. */
export async function pruneChain(chain: ChainDocument, hops: number[]): Promise<ChainDocument> {
  const entries = await Promise.all(
    chain.entries.map(async (e, i): Promise<ChainEntry> => (hops.includes(i) && !("pruned" in e) ? { hop_count: e.hop_count, receipt_hash: receiptHashOf(await receiptDigest(e.receipt)), pruned: true } : e)),
  );
  return { ...chain, entries };
}


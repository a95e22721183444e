/**
 * Evidence chains (CCS §11): hops of receipts, each linked to the one before by a hash that the
 * later receipt signs, or else vouched for as a whole by a seal. Verified in full or at one spot.
 * The hop rule (`judgeHop`) is the one both the offline verifier and the live EvidenceChain
 * apply. Pure: runs offline under plain Node (the CLI) with whatever anchors and verifier it is
 * given.
 */
import { failure, type Failure, type FailureCode } from "./codes.js";
import { jcs, sha256, SHA256_PREFIX } from "./digest.js";
import { fromHex, HEX16, SHA256_REF, toHex } from "./encoding.js";
import type { ReplayLedger } from "./ledger.js";
import { isJsonObject as isObject } from "./strict-json.js";
import { canonicalReceipt, parseReceipt, type Receipt } from "./receipt.js";
import type { FreshnessPolicy } from "./checks/freshness.js";
import { rejection, verifyReceipt, type Decision, type VerifyDeps } from "./verify.js";
import { withoutForeignNonceState } from "./nonce-state.js";
import { isLevel0Shape, level0Refused } from "./conformance/level0.js";
import { CHAIN_ID, checkSeal, type ChainSeal, type SealDeps } from "./chain-seal.js";

export { CHAIN_ID };

/** A chain holds at most this many hops (hop_count 0 … 15). */
export const MAX_CHAIN_HOPS = 16;
/** Documents longer than this are refused before any work. */
export const MAX_CHAIN_ENTRIES = 64;

export interface KeptEntry {
  hop_count: number;
  /** The document's own claim of the link; only the receipt's signed delegation makes it a signed link. */
  previous_receipt_hash?: string | null;
  receipt: Record<string, unknown>;
  /** The runtime context the receipt's `runtime_context_hash` binds; carries `delegation` for a signed link. */
  runtime_context?: unknown;
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

/**
 * What a receipt's runtime context says about the hop it was issued for; covered by the
 * receipt's signature through `runtime_context_hash`. At hop 0 both references are null.
 */
export interface Delegation {
  previous_receipt_hash: string | null;
  parent_trace_id: string | null;
  hop_count: number;
}

/**
 * How a hop is tied to the one before: `signed` when its receipt's signed delegation names the
 * previous receipt hash, `unsigned` when only the document says so, `none` at hop 0, `pruned`
 * when the entry is pruned (only a seal vouches for it).
 */
export type LinkStatus = "signed" | "unsigned" | "none" | "pruned";

/** The link of a hop whose receipt was verified: never `pruned`, since a pruned hop has no receipt to verify. */
export type VerifiedLinkStatus = Exclude<LinkStatus, "pruned">;

export interface ChainFailure extends Failure {
  /** The hop the failure is at; for the summary or the seal, the hop where the sealed chain stops matching. */
  hop: number;
}

/**
 * A verified hop: how it is linked, and what its receipt decided. Chain validity is about the
 * evidence only; a valid chain may hold a deny or an escalate, which `verdict` and `action` show.
 */
export interface HopReport {
  hop: number;
  status: VerifiedLinkStatus;
  /** The receipt's verdict (allow, deny, escalate), or null when the receipt is not of its form. */
  verdict: Decision["enforcement"]["verdict"];
  /** The receipt's CCS Figure 9 enforcement action; `block` for a receipt that does not verify. */
  action: Decision["enforcement"]["action"];
}

export interface ChainVerdict {
  chain_id: string;
  /**
   * The whole document is authentic: in full mode every check passed; in spot mode the spot hop
   * passed and a valid seal covers the document, since nothing else vouches for the hops the spot
   * check did not verify.
   */
  chain_valid: boolean;
  broken_at_hop: number | null;
  failures: ChainFailure[];
  /** The summary hash recomputed from the entries. */
  summary_hash: string;
  total_hops: number;
  mode: "full" | "spot";
  /** The hops whose receipts were judged (every kept hop in full mode, the spot hop in spot mode). */
  verified_hops: number[];
  /** The link and the receipt's verdict of every verified hop. */
  links: HopReport[];
  /** Spot mode: whether the spot hop itself passed (its receipt and its link); null in full mode. */
  spot_valid: boolean | null;
  /** The seal presented, and whether it vouches for this very document; null without one. */
  seal: { issuer: string; kid: string; sealed_at: number; valid: boolean } | null;
}

export interface ChainOptions {
  /**
   * Verify only this hop's receipt; every entry's form, links, repeats and pruning are still
   * judged. Only a valid seal makes the chain valid then: a spot check authenticates its own hop
   * (and through a signed link the previous hop's hash), never the entries it did not verify.
   */
  spot?: number;
  /**
   * Judge each receipt's freshness at `now` (the default, CCS §11.5). False is the archival
   * opt-out: each receipt is judged as of `at` when given, else as of its own `issued_at`, so the
   * validity window holds but the lifetime policy still applies.
   */
  checkFreshness?: boolean;
  at?: number;
  now: number;
  policy: FreshnessPolicy;
  /** A seal over the document: with it, pruned entries and unsigned links are vouched for. */
  seal?: ChainSeal;
  /**
   * The caller's own check of a verified hop's issuer (a relying party's verifier-class floor, CCS
   * §9), run with that receipt's stateless checks; its failures are the hop's. Not run on the
   * seal's issuer, nor on a hop that is not verified here.
   */
  classCheck?: (issuer: string) => Failure[];
}

/** A hop a seal would vouch for without its receipt having been verified here. */
export interface UnverifiedHop {
  hop: number;
  receipt_hash: string;
  pruned: boolean;
}

/** Anchors, verifier, and the issuers' ledgers for revocation; offline verifiers without a ledger judge no revocation. */
export interface ChainDeps extends SealDeps {
  ledger?: VerifyDeps["ledger"];
  /** As on the receipt route (MANIFEST_STALE at a kept hop); offline verifiers pass none. */
  manifestBinding?: VerifyDeps["manifestBinding"];
  /**
   * What the verifier itself knows of revocations under this chain id (a live chain it holds):
   * failures for those of `hops` it knows were signed by a key since revoked (a pruned entry
   * names no key, so this is the only way to learn it), and one for a seal of its own it has
   * withdrawn. A failure here withdraws the seal. Online only; offline verifiers pass none.
   */
  sealWithdrawals?(chainId: string, hops: UnverifiedHop[], seal: ChainSeal): Promise<ChainFailure[]>;
}

export type ChainParse = { ok: true; chain: ChainDocument } | { ok: false; detail: string };

const isHop = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const KEPT_FIELDS = ["hop_count", "previous_receipt_hash", "receipt", "runtime_context"];

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
  for (const key of Object.keys(e)) if (!KEPT_FIELDS.includes(key)) return `unknown field ${JSON.stringify(key)}`;
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

/** The raw SHA-256 of a receipt's canonical form (signature included): receipt_hash without its prefix. */
export function receiptDigest(receipt: Record<string, unknown>): Promise<Uint8Array> {
  const parse = parseReceipt(receipt);
  return sha256(parse.ok ? canonicalReceipt(parse.receipt).fullText : jcs(receipt));
}

export const receiptHashOf = (digest: Uint8Array): string => SHA256_PREFIX + toHex(digest);

/** `sha256:` + hex(SHA-256(raw receipt digests concatenated in insertion order)). */
export async function summaryHash(digests: Uint8Array[]): Promise<string> {
  const all = new Uint8Array(digests.length * 32);
  digests.forEach((d, i) => all.set(d, i * 32));
  return SHA256_PREFIX + toHex(await sha256(all));
}

const DELEGATION_FIELDS = ["hop_count", "parent_trace_id", "previous_receipt_hash"];

/** The delegation a runtime context carries: undefined when it carries none, null when it is not of its form. */
export function delegationOf(runtimeContext: unknown): Delegation | null | undefined {
  if (!isObject(runtimeContext) || !Object.hasOwn(runtimeContext, "delegation")) return undefined;
  const d = runtimeContext.delegation;
  if (!isObject(d) || Object.keys(d).length !== 3 || !DELEGATION_FIELDS.every((k) => Object.hasOwn(d, k))) return null;
  const ref = d.previous_receipt_hash;
  const parent = d.parent_trace_id;
  if (!isHop(d.hop_count)) return null;
  if (ref !== null && (typeof ref !== "string" || !SHA256_REF.test(ref))) return null;
  if (parent !== null && (typeof parent !== "string" || !HEX16.test(parent))) return null;
  return d as unknown as Delegation;
}

/** The chain before the hop being judged. */
export interface ChainSoFar {
  /** Receipt hashes of hops 0 … n−1, in order. */
  hashes: string[];
  /** The trace_id of hop n−1 when its receipt is at hand (null at hop 0 or after a pruned hop). */
  previousTraceId: string | null;
}

/** A hop as presented: a kept one with its receipt hash, or a pruned one. */
export type HopClaim =
  | { pruned: false; hop_count: number; previous_receipt_hash?: string | null; runtime_context?: unknown; receipt_hash: string }
  | { pruned: true; hop_count: number; receipt_hash: string };

/**
 * The hop rule, applied to hop n = `before.hashes.length`: numbered n, within the hop limit, a
 * receipt not already in the chain, and linked to hop n−1. The link is signed when the receipt's
 * runtime context carries `delegation` naming hop n−1's receipt hash (and its trace_id, when that
 * receipt is at hand) and hop n; an unsigned link, and a pruned hop, stand only under a valid
 * seal (`sealed`). The receipt itself, and that its runtime context is the one it signed, are
 * judged by verifyReceipt.
 */
export function judgeHop(claim: HopClaim, before: ChainSoFar, sealed: boolean): { link: LinkStatus; failures: Failure[] } {
  const n = before.hashes.length;
  const failures: Failure[] = [];
  const fail = (code: FailureCode, detail: string) => failures.push(failure(code, detail));
  if (claim.hop_count !== n) fail("CHAIN_BROKEN", `entry ${n} says hop ${claim.hop_count}: hops are numbered from 0 in order`);
  if (n >= MAX_CHAIN_HOPS) fail("HOP_LIMIT_EXCEEDED", `hop ${n}: a chain holds at most ${MAX_CHAIN_HOPS} hops`);
  if (before.hashes.includes(claim.receipt_hash)) fail("RECEIPT_REPEATED", `the receipt of hop ${n} is already at hop ${before.hashes.indexOf(claim.receipt_hash)}: a receipt appears in a chain at most once`);
  if (claim.pruned) {
    if (!sealed) fail("CHAIN_UNSEALED", `hop ${n} is pruned: a pruned entry stands only under a valid seal covering the chain`);
    return { link: "pruned", failures };
  }
  const expected = n === 0 ? null : before.hashes[n - 1];
  const claimed = claim.previous_receipt_hash ?? null;
  if (n === 0 && claimed !== null) fail("CHAIN_BROKEN", "hop 0 names a predecessor that is not in the chain");
  if (n > 0 && claimed === null) fail("CHAIN_BROKEN", `hop ${n} has no previous_receipt_hash: every hop after hop 0 names the receipt hash of the hop before`);
  else if (n > 0 && claimed !== expected) fail("CHAIN_BROKEN", `hop ${n}'s previous_receipt_hash is not the receipt hash of hop ${n - 1}`);
  const delegation = delegationOf(claim.runtime_context);
  let link: LinkStatus = n === 0 ? "none" : "unsigned";
  if (delegation === null) fail("CHAIN_BROKEN", `hop ${n}'s runtime_context.delegation is not {previous_receipt_hash, parent_trace_id, hop_count}`);
  else if (delegation !== undefined) {
    if (delegation.hop_count !== n) fail("CHAIN_BROKEN", `hop ${n}'s signed delegation says hop ${delegation.hop_count}`);
    if (n === 0 && (delegation.previous_receipt_hash !== null || delegation.parent_trace_id !== null)) fail("CHAIN_BROKEN", "hop 0's signed delegation names a predecessor that is not in the chain");
    if (n > 0 && delegation.previous_receipt_hash !== expected) fail("CHAIN_BROKEN", `hop ${n}'s signed delegation names another receipt than hop ${n - 1}`);
    else if (n > 0) link = "signed";
    if (n > 0 && before.previousTraceId !== null && delegation.parent_trace_id !== before.previousTraceId) fail("CHAIN_BROKEN", `hop ${n}'s signed delegation names another parent_trace_id than hop ${n - 1}'s trace_id`);
  }
  if (link === "unsigned" && delegation === undefined && !sealed) fail("LINK_UNSIGNED", `hop ${n}'s receipt does not sign its link to hop ${n - 1} (no runtime_context.delegation) and no valid seal covers the chain`);
  return { link, failures };
}

const at = (hop: number, f: Failure): ChainFailure => ({ ...f, hop });

/** Offline: no ledger, so nothing is revoked and no nonce is known. */
const NO_LEDGER: ReplayLedger = {
  claim: async () => ({ revoked: false, replay: null, consumed: false }),
  inspect: async () => ({ revoked: false, replay: null, consumed: false }),
};

const traceIdOf = (e: ChainEntry): string | null => ("pruned" in e || typeof e.receipt.trace_id !== "string" ? null : e.receipt.trace_id);
const claimOf = (e: ChainEntry, receiptHash: string): HopClaim =>
  "pruned" in e
    ? { pruned: true, hop_count: e.hop_count, receipt_hash: receiptHash }
    : { pruned: false, hop_count: e.hop_count, previous_receipt_hash: e.previous_receipt_hash, runtime_context: e.runtime_context, receipt_hash: receiptHash };

/**
 * Failures for the hops a seal would vouch for unverified (`verified` excepted) that were signed by
 * a revoked key: a kept hop's key is the pinned key of its issuer, among those revoked, its
 * signature verifies under; a pruned hop's, or any hop's the verifier holds as a live chain, is
 * what `sealWithdrawals` knows. Without a revocation source (offline) nothing is found.
 */
async function revokedUnderSeal(chain: ChainDocument, hashes: string[], verified: number[], seal: ChainSeal, deps: ChainDeps): Promise<ChainFailure[]> {
  const unverified = chain.entries.flatMap((e, i): UnverifiedHop[] => (verified.includes(i) ? [] : [{ hop: i, receipt_hash: hashes[i], pruned: "pruned" in e }]));
  const out: ChainFailure[] = [];
  if (deps.revokedKeys) {
    for (const { hop } of unverified) {
      const e = chain.entries[hop];
      if ("pruned" in e) continue;
      const parsed = parseReceipt(e.receipt);
      // A receipt not of its form, or of an issuer with no key revoked, names no revoked key.
      if (!parsed.ok) continue;
      const r = parsed.receipt;
      const revoked = await deps.revokedKeys(r.issuer);
      if (revoked.size === 0) continue;
      const keys = ((await deps.anchors(r.issuer))?.keys ?? []).filter((k) => revoked.has(k.fingerprint));
      const { signedBytes } = canonicalReceipt(r);
      const signature = fromHex(r.signature)!;
      for (const key of keys) {
        if (await deps.verifier.verify(key.raw, key.fingerprint, signature, signedBytes)) {
          out.push(at(hop, failure("ANCHOR_REVOKED", `hop ${hop}'s receipt is signed by key ${key.kid} of ${r.issuer}, since revoked: the seal does not vouch for it`)));
          break;
        }
      }
    }
  }
  if (deps.sealWithdrawals) {
    for (const f of await deps.sealWithdrawals(chain.chain_id, unverified, seal)) {
      const hop = Math.min(f.hop, chain.entries.length - 1);
      if (!out.some((o) => o.hop === hop && o.code === f.code)) out.push({ ...f, hop });
    }
  }
  return out;
}

export async function verifyChain(chain: ChainDocument, opts: ChainOptions, deps: ChainDeps): Promise<ChainVerdict | { malformed: string }> {
  const { entries } = chain;
  const spot = opts.spot;
  if (spot !== undefined) {
    if (!isHop(spot) || spot >= entries.length) return { malformed: `spot must name a hop of the chain (0..${entries.length - 1})` };
    if ("pruned" in entries[spot]) return { malformed: `hop ${spot} is pruned: there is no receipt to verify there` };
  }
  const digests = await Promise.all(entries.map((e) => ("pruned" in e ? fromHex(e.receipt_hash.slice(7))! : receiptDigest(e.receipt))));
  const hashes = digests.map(receiptHashOf);
  const summary = await summaryHash(digests);
  const last = entries.length - 1;
  const failures: ChainFailure[] = [];

  const archival = opts.checkFreshness === false;
  const issuedAts = entries.flatMap((e) => ("pruned" in e || typeof e.receipt.issued_at !== "number" || !Number.isFinite(e.receipt.issued_at) ? [] : [e.receipt.issued_at]));
  const latestIssuedAt = issuedAts.length > 0 ? Math.max(...issuedAts) : null;
  const sealClock = (seal: ChainSeal) => ({ now: opts.now, skew: opts.policy.skewCap, latestIssuedAt, verifiedAt: archival ? (opts.at ?? seal.sealed_at) : opts.now });
  const sealFailures = opts.seal ? await checkSeal(opts.seal, { chain_id: chain.chain_id, total_hops: entries.length, summary_hash: summary, tail: hashes[last] }, sealClock(opts.seal), deps) : null;
  // The hops whose receipts are not verified below: only the seal vouches for them, and a seal
  // never vouches for a hop signed by a key since revoked (CCS §14), so their keys are judged here.
  const verified = spot === undefined ? entries.flatMap((e, i) => ("pruned" in e ? [] : [i])) : [spot];
  const withdrawn = opts.seal && sealFailures!.length === 0 ? await revokedUnderSeal(chain, hashes, verified, opts.seal, deps) : [];
  const sealed = sealFailures !== null && sealFailures.length === 0 && withdrawn.length === 0;
  failures.push(...withdrawn);

  const hopFailures: Failure[][] = [];
  const links = entries.map((e, i) => {
    const judged = judgeHop(claimOf(e, hashes[i]), { hashes: hashes.slice(0, i), previousTraceId: i > 0 ? traceIdOf(entries[i - 1]) : null }, sealed);
    hopFailures.push(judged.failures);
    failures.push(...judged.failures.map((f) => at(i, f)));
    return judged.link;
  });

  // Every kept receipt is judged by the receipt route's own predicate, in audit mode: no consumer
  // is judged (each hop's receipt is addressed to that hop's consumer) and a nonce already
  // consumed is not a failure (the executors consumed them); revocation still is.
  const ledgerDeps: VerifyDeps = { anchors: deps.anchors, verifier: deps.verifier, ledger: deps.ledger ?? (() => NO_LEDGER), manifestBinding: deps.manifestBinding };
  const decisions = await Promise.all(
    verified.map((i) => {
      const e = entries[i] as KeptEntry;
      const issuedAt = typeof e.receipt.issued_at === "number" ? e.receipt.issued_at : opts.now;
      const now = archival ? (opts.at ?? issuedAt) : opts.now;
      // A Level 0 receipt's HMAC proves nothing to whoever reads a chain: refused by name.
      if (isLevel0Shape(e.receipt)) return Promise.resolve(rejection([level0Refused("a chain")], "audit", now));
      const classCheck = opts.classCheck;
      return verifyReceipt(e.receipt, { audience: null, mode: "audit", replay: "ignore", now, policy: opts.policy, runtimeContext: e.runtime_context, ...(classCheck ? { contextChecks: (r: Receipt) => classCheck(r.issuer) } : {}) }, ledgerDeps);
    }),
  );
  decisions.forEach((d, k) => {
    const i = verified[k];
    // A hop is judged in audit mode: its nonce's state (replay is ignored, a withdrawal is not) is
    // told only for a receipt its issuer signed, as the receipt route's audit tells it.
    failures.push(...withoutForeignNonceState(d).failures.map((f) => at(i, f)));
    // A delegation is a signed link only if the receipt verifies with that very runtime context.
    if (!d.valid && links[i] === "signed") links[i] = "unsigned";
  });

  const isCritical = (f: Failure) => f.severity === "CRITICAL";
  const spotValid = spot === undefined ? null : decisions[0].valid && !hopFailures[spot].some(isCritical);
  if (spot !== undefined && !sealed) {
    const unvouched = entries.length > 1 ? (spot === 0 ? 1 : 0) : spot;
    failures.push(at(unvouched, failure("CHAIN_UNSEALED", `spot verification vouches for the whole chain only under a seal: without a valid one, hop ${spot} alone was verified`)));
  }
  const sealedAt = Math.min(chain.total_hops, entries.length) - (chain.total_hops === entries.length ? 1 : 0);
  if (chain.total_hops !== entries.length) failures.push(at(sealedAt, failure("CHAIN_BROKEN", `total_hops is ${chain.total_hops} but the chain has ${entries.length} hops`)));
  if (summary !== chain.summary_hash) failures.push(at(Math.max(0, sealedAt), failure("CHAIN_BROKEN", "summary_hash does not match the receipts in the chain")));
  if (sealFailures) failures.push(...sealFailures.map((f) => at(last, f)));
  failures.sort((a, b) => a.hop - b.hop);
  const critical = failures.filter(isCritical);
  return {
    chain_id: chain.chain_id,
    chain_valid: critical.length === 0,
    broken_at_hop: critical.length ? critical[0].hop : null,
    failures,
    summary_hash: summary,
    total_hops: entries.length,
    mode: spot === undefined ? "full" : "spot",
    verified_hops: verified,
    links: verified.map((i, k) => ({ hop: i, status: links[i] as VerifiedLinkStatus, verdict: decisions[k].enforcement.verdict, action: decisions[k].enforcement.action })),
    spot_valid: spotValid,
    seal: opts.seal ? { issuer: opts.seal.issuer, kid: opts.seal.kid, sealed_at: opts.seal.sealed_at, valid: sealed } : null,
  };
}

/** A receipt with the runtime context it binds, as an issuer hands it to the next hop. */
export interface ChainHop {
  receipt: Receipt | Record<string, unknown>;
  runtime_context?: unknown;
}

/** Builds a chain document from hops (for issuers, the CLI and the vector generator). */
export async function buildChain(chainId: string, hops: ChainHop[]): Promise<ChainDocument> {
  const receipts = hops.map((h) => h.receipt as Record<string, unknown>);
  const digests = await Promise.all(receipts.map(receiptDigest));
  const entries: ChainEntry[] = hops.map(({ runtime_context }, i) => ({
    hop_count: i,
    ...(i === 0 ? {} : { previous_receipt_hash: receiptHashOf(digests[i - 1]) }),
    receipt: receipts[i],
    ...(runtime_context === undefined ? {} : { runtime_context }),
  }));
  return { chain_id: chainId, entries, summary_hash: await summaryHash(digests), total_hops: entries.length };
}

/** Replaces kept hops by their pruned form; the document then stands only under a seal. */
export async function pruneChain(chain: ChainDocument, hops: number[]): Promise<ChainDocument> {
  const entries = await Promise.all(
    chain.entries.map(async (e, i): Promise<ChainEntry> => (hops.includes(i) && !("pruned" in e) ? { hop_count: e.hop_count, receipt_hash: receiptHashOf(await receiptDigest(e.receipt)), pruned: true } : e)),
  );
  return { ...chain, entries };
}

/**
 * Chain seals: an issuer's Ed25519 signature over what a chain document is (its id, its number of
 * hops, its summary hash and its tail). A valid seal authenticates the whole document, pruned
 * entries and unsigned links included, because the summary hash covers every receipt hash in
 * order. Pure: the CLI verifies seals offline with whatever anchors it is given.
 */
import { keysValidAt, type PinnedIssuer } from "./anchors.js";
import { failure, type Failure } from "./codes.js";
import { seconds } from "./checks/freshness.js";
import { jcs } from "./digest.js";
import { signWithSeed, type SignatureVerifier } from "./ed25519.js";
import { fromHex, SHA256_REF, toHex, utf8 } from "./encoding.js";
import { isHttpsUri } from "./receipt.js";
import { isJsonObject } from "./strict-json.js";
import { KID } from "./issuing/identity.js";

/**
 * The seal's fixed `type` member. It is signed with the rest, so the bytes of a seal can never be
 * taken for those of a receipt or of any other object signed by the same key.
 */
export const SEAL_TYPE = "countersign.chain-seal.v1";

/** A chain id: what a live chain is named by and what a seal names. */
export const CHAIN_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const SEAL_FIELDS = ["chain_id", "issuer", "kid", "sealed_at", "signature", "summary_hash", "tail", "total_hops", "type"];

/** What a seal vouches for: exactly what the chain's entries give. */
export interface SealedChain {
  chain_id: string;
  total_hops: number;
  summary_hash: string;
  tail: string;
}

export interface ChainSeal extends SealedChain {
  type: typeof SEAL_TYPE;
  /** Unix seconds; the sealing key must be valid at this instant and at verification time. */
  sealed_at: number;
  issuer: string;
  kid: string;
  /** 128 lowercase hex: Ed25519 over the RFC 8785 bytes of the seal without `signature`. */
  signature: string;
}

export type SealParse = { ok: true; seal: ChainSeal } | { ok: false; detail: string };

/** The seal's form, or why it is not a seal (a malformed call, not a failed seal). */
export function parseSeal(value: unknown): SealParse {
  const bad = (detail: string): SealParse => ({ ok: false, detail: `seal: ${detail}` });
  if (!isJsonObject(value)) return bad("must be an object");
  for (const key of Object.keys(value)) if (!SEAL_FIELDS.includes(key)) return bad(`unknown field ${JSON.stringify(key)}`);
  for (const key of SEAL_FIELDS) if (!Object.hasOwn(value, key)) return bad(`missing field ${key}`);
  if (value.type !== SEAL_TYPE) return bad(`type must be "${SEAL_TYPE}"`);
  if (typeof value.chain_id !== "string" || !CHAIN_ID.test(value.chain_id)) return bad("chain_id must be 1-128 of [A-Za-z0-9._:-]");
  if (!Number.isSafeInteger(value.total_hops) || (value.total_hops as number) < 1) return bad("total_hops must be an integer >= 1");
  if (typeof value.summary_hash !== "string" || !SHA256_REF.test(value.summary_hash)) return bad('summary_hash must be "sha256:" + 64 lowercase hex');
  if (typeof value.tail !== "string" || !SHA256_REF.test(value.tail)) return bad('tail must be "sha256:" + 64 lowercase hex');
  if (typeof value.sealed_at !== "number" || !Number.isFinite(value.sealed_at)) return bad("sealed_at must be a number of Unix seconds");
  if (!isHttpsUri(value.issuer)) return bad("issuer must be an https:// URI");
  if (typeof value.kid !== "string" || !KID.test(value.kid)) return bad("kid must be 1-128 of [A-Za-z0-9._:-]");
  if (typeof value.signature !== "string" || value.signature !== value.signature.toLowerCase() || fromHex(value.signature)?.length !== 64) return bad("signature must be 128 lowercase hex");
  return { ok: true, seal: value as unknown as ChainSeal };
}

/** The signed bytes: RFC 8785 canonical JSON of every member but `signature`. */
export function sealBytes(seal: Omit<ChainSeal, "signature">): Uint8Array {
  const { type, chain_id, total_hops, summary_hash, tail, sealed_at, issuer, kid } = seal;
  return utf8(jcs({ type, chain_id, total_hops, summary_hash, tail, sealed_at, issuer, kid }));
}

/** Seals a chain as `issuer` with the Ed25519 seed of its key `kid`. */
export function signSeal(chain: SealedChain, signer: { issuer: string; kid: string; seed: Uint8Array }, sealedAt: number): ChainSeal {
  const unsigned = { type: SEAL_TYPE as typeof SEAL_TYPE, chain_id: chain.chain_id, total_hops: chain.total_hops, summary_hash: chain.summary_hash, tail: chain.tail, sealed_at: sealedAt, issuer: signer.issuer, kid: signer.kid };
  return { ...unsigned, signature: toHex(signWithSeed(sealBytes(unsigned), signer.seed)) };
}

export interface SealDeps {
  anchors(issuer: string): Promise<PinnedIssuer | null>;
  verifier: SignatureVerifier;
  /** Fingerprints of an issuer's revoked keys, from the same ledger the receipts' revocation is read from. */
  revokedKeys?(issuer: string): Promise<Set<string>>;
}

/** The instants a seal is judged at. */
export interface SealClock {
  /** The verifier's clock: a `sealed_at` later than `now + skew` is refused. */
  now: number;
  skew: number;
  /**
   * The latest `issued_at` among the receipts the document keeps (null when it keeps none of that
   * form): a seal cannot vouch for receipts issued after it, so a `sealed_at` earlier than this
   * minus `skew` is refused. A pruned entry's receipt, not at hand, bounds nothing.
   */
  latestIssuedAt: number | null;
  /**
   * The instant the sealing key must still be valid at (its `not_after`), as for a receipt's key:
   * `now`, or under the archival opt-out the instant the chain is judged as of.
   */
  verifiedAt: number;
}

/**
 * A seal is valid when its issuer is pinned as a chain sealer (a seal vouches for receipts of any
 * issuer, so pinning an issuer for its receipts does not trust its seals), `sealed_at` is not in
 * the future nor before the receipts it covers were issued, its key `kid` is pinned, valid at `sealed_at` and still valid at verification time
 * (the receipts' `not_after` rule, so a key past its validity cannot seal by back-dating), not
 * revoked, its signature verifies, and it vouches for exactly the chain the entries give.
 */
export async function checkSeal(seal: ChainSeal, chain: SealedChain, clock: SealClock, deps: SealDeps): Promise<Failure[]> {
  const failures: Failure[] = [];
  const pinned = await deps.anchors(seal.issuer);
  const key = pinned ? keysValidAt(pinned.keys, seal.sealed_at).find((k) => k.kid === seal.kid) : undefined;
  if (!pinned) failures.push(failure("UNTRUSTED_ISSUER", `seal issuer ${seal.issuer} is not pinned`));
  else if (!pinned.chainSealer) failures.push(failure("SEALER_NOT_TRUSTED", `seal issuer ${seal.issuer} is pinned for its receipts but not as a chain sealer (chain_sealer: true)`));
  else if (seal.sealed_at > clock.now + clock.skew) failures.push(failure("FRESHNESS_EXPIRED", `the seal's sealed_at is ${seconds(seal.sealed_at - clock.now)}s in the future (skew ${clock.skew}s)`));
  else if (clock.latestIssuedAt !== null && seal.sealed_at < clock.latestIssuedAt - clock.skew) {
    failures.push(failure("FRESHNESS_EXPIRED", `the seal's sealed_at is ${seconds(clock.latestIssuedAt - seal.sealed_at)}s before the latest issued_at of the receipts it covers (skew ${clock.skew}s): it cannot vouch for receipts issued after it`));
  }
  else if (!key) failures.push(failure("UNTRUSTED_ISSUER", `seal key ${seal.kid} is not a pinned key of ${seal.issuer} valid at sealed_at`));
  else if (!(await deps.verifier.verify(key.raw, key.fingerprint, fromHex(seal.signature)!, sealBytes(seal)))) {
    failures.push(failure("SEAL_INVALID", `the seal's signature does not verify under key ${seal.kid} of ${seal.issuer}`));
  } else if (key.not_after !== null && clock.verifiedAt > key.not_after) {
    failures.push(failure("UNTRUSTED_ISSUER", `seal key ${seal.kid} of ${seal.issuer}, whose validity ended at not_after ${key.not_after}, before verification at ${clock.verifiedAt}`));
  } else if (deps.revokedKeys && (await deps.revokedKeys(seal.issuer)).has(key.fingerprint)) {
    failures.push(failure("ANCHOR_REVOKED", `seal key ${seal.kid} of ${seal.issuer} has been revoked`));
  }
  const differs = (["chain_id", "total_hops", "summary_hash", "tail"] as const).filter((k) => seal[k] !== chain[k]);
  if (differs.length) failures.push(failure("SEAL_MISMATCH", `the seal vouches for another chain: its ${differs.join(", ")} differ from what the entries give`));
  return failures;
}

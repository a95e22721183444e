/**
 * This deployment's own signing identity: the issuer URI it signs as, the Ed25519 key that
 * signs (one kid), the earlier keys it still publishes during a rotation, and the separate
 * key of the legacy HMAC field. Parsed once from configuration; pure, so the CLI can use it.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { publicKeyFromSeed, publicKeyProblem } from "../ed25519.js";
import { fromBase64Url, fromHex, toBase64Url, toHex } from "../encoding.js";
import { isHttpsUri } from "../receipt.js";

export const KID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A key as published at `/.well-known/ccs-issuer`: exactly an entry the anchor pin accepts. */
export interface PublishedKey {
  kid: string;
  alg: "Ed25519";
  public_key: string;
  fingerprint: string;
}

export interface SigningIdentity {
  issuer: string;
  orgId: string | null;
  /** The kid that signs everything issued now. */
  kid: string;
  seed: Uint8Array;
  publicKey: Uint8Array;
  fingerprint: string;
  /** The signing key first, then earlier keys still published so their receipts keep verifying. */
  published: PublishedKey[];
  legacyHmacKey: Uint8Array;
}

export interface IdentityConfig {
  ISSUER?: string;
  ORG_ID?: string;
  SIGNING_KEY?: string;
  SIGNING_KID?: string;
  LEGACY_HMAC_KEY?: string;
  /** JSON array of `{kid, public_key}`: retired keys still published. */
  PUBLISHED_KEYS?: string;
}

export type IdentityParse = { ok: true; identity: SigningIdentity } | { ok: false; problems: string[] };

/** The most keys one anchor pin takes (`kv-schemas/anchor-pin.schema.json`, `keys.maxItems`). */
export const MAX_PINNED_KEYS = 16;

export const fingerprintOf = (publicKey: Uint8Array): string => toHex(sha256(publicKey));

/** Validates the configuration; every problem is named, none carries a secret. */
export function parseSigningIdentity(c: IdentityConfig): IdentityParse {
  const problems: string[] = [];
  if (!isHttpsUri(c.ISSUER)) problems.push("ISSUER must be an https:// URI");
  if (c.ORG_ID && !isHttpsUri(c.ORG_ID)) problems.push("ORG_ID must be an https:// URI");
  const seed = c.SIGNING_KEY && /^[0-9a-f]{64}$/.test(c.SIGNING_KEY) ? fromHex(c.SIGNING_KEY) : null;
  if (!seed) problems.push("SIGNING_KEY must be the 32-byte Ed25519 seed as 64 lowercase hex");
  if (!c.SIGNING_KID || !KID.test(c.SIGNING_KID)) problems.push("SIGNING_KID must be 1-128 of [A-Za-z0-9._:-]");
  const hmac = c.LEGACY_HMAC_KEY && /^([0-9a-f]{2}){32,}$/.test(c.LEGACY_HMAC_KEY) ? fromHex(c.LEGACY_HMAC_KEY) : null;
  if (!hmac) problems.push("LEGACY_HMAC_KEY must be at least 32 bytes as lowercase hex");
  const retired = parseRetired(c.PUBLISHED_KEYS, problems);
  if (problems.length > 0 || !seed || !hmac) return { ok: false, problems };
  const publicKey = publicKeyFromSeed(seed);
  const own: PublishedKey = { kid: c.SIGNING_KID!, alg: "Ed25519", public_key: toBase64Url(publicKey), fingerprint: fingerprintOf(publicKey) };
  const published = [own, ...retired];
  if (new Set(published.map((k) => k.kid)).size !== published.length) return { ok: false, problems: ["PUBLISHED_KEYS repeats a kid"] };
  return {
    ok: true,
    identity: { issuer: c.ISSUER!, orgId: c.ORG_ID || null, kid: own.kid, seed, publicKey, fingerprint: own.fingerprint, published, legacyHmacKey: hmac },
  };
}

function parseRetired(text: string | undefined, problems: string[]): PublishedKey[] {
  if (!text) return [];
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    problems.push("PUBLISHED_KEYS must be a JSON array of {kid, public_key}");
    return [];
  }
  if (!Array.isArray(list)) {
    problems.push("PUBLISHED_KEYS must be a JSON array of {kid, public_key}");
    return [];
  }
  // The issuer document lists the signing key and these, and a pin takes at most MAX_PINNED_KEYS keys:
  // more would publish a /.well-known/ccs-issuer that PUT /v1/admin/anchors refuses (npm start's included).
  if (list.length > MAX_PINNED_KEYS - 1) {
    problems.push(`PUBLISHED_KEYS lists at most ${MAX_PINNED_KEYS - 1} keys (with the signing key, the ${MAX_PINNED_KEYS} one anchor pin takes)`);
    return [];
  }
  const out: PublishedKey[] = [];
  for (const [i, k] of list.entries()) {
    const raw = typeof k?.public_key === "string" ? fromBase64Url(k.public_key) : null;
    const problem = typeof k?.kid !== "string" || !KID.test(k.kid) ? "kid must be 1-128 of [A-Za-z0-9._:-]" : raw ? publicKeyProblem(raw) : "public_key must be base64url of 32 bytes";
    if (problem) problems.push(`PUBLISHED_KEYS[${i}]: ${problem}`);
    else out.push({ kid: k.kid, alg: "Ed25519", public_key: k.public_key, fingerprint: fingerprintOf(raw!) });
  }
  return out;
}

/**
 * `GET /.well-known/ccs-issuer`: the body `PUT /v1/admin/anchors` takes as it is. A countersign
 * deployment seals the live chains it holds, so its document asks to be pinned as a chain sealer:
 * pinning it as published trusts its seals.
 */
export function issuerDocument(id: SigningIdentity): { issuer: string; org_id: string | null; chain_sealer: true; keys: PublishedKey[] } {
  return { issuer: id.issuer, org_id: id.orgId, chain_sealer: true, keys: id.published };
}

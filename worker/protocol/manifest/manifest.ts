/**
 * Capability manifests (CCS §4.6): a verifier's signed declaration of the profiles it evaluates,
 * its challenge policy and its signing key. Pure: keys, clock and signer are parameters, so the
 * Worker, the CLI and the tests share every rule here.
 *
 * Three digests, each over RFC 8785 bytes:
 * - `profiles_digest` = `sha256:` + SHA-256(JCS(profiles));
 * - the signature, Ed25519 over JCS(manifest without `signature`);
 * - `manifest_hash` = `sha256:` + SHA-256(JCS(content)), where the content is the manifest without
 *   `published_at`, `expires_at` and `signature`. Re-signing the same declaration for a new
 *   validity window therefore keeps manifest_hash, and with it the config_hash it enters; any
 *   change to what is declared (profiles, challenge policy, key, verifier id, version) changes both.
 */
import { validateManifest } from "../../../kv-schemas/index.js";
import { keysValidAt, type TrustedKey } from "../anchors.js";
import { jcs, prefixedDigest } from "../digest.js";
import type { SignatureVerifier } from "../ed25519.js";
import { fromHex, toHex, utf8 } from "../encoding.js";
import { isHttpsUri } from "../receipt.js";

export const MANIFEST_VERSION = "1";

/**
 * The longest validity window (expires_at − published_at, seconds) a manifest may declare: 31
 * days. A pinned manifest is trusted until it expires, so an unbounded window would keep a
 * declaration current long after its verifier changed or withdrew it.
 */
export const MAX_MANIFEST_WINDOW = 31 * 86_400;

export interface Profile {
  id: string;
  comparison_scope: string;
}

/** How a challenge's deadline is derived (CCS §4.7): min(base_duration × deadline_multiplier, max_deadline) seconds after issue. */
export interface ChallengePolicy {
  base_duration: number;
  deadline_multiplier: number;
  max_deadline: number;
}

/** What manifest_hash covers. */
export interface ManifestContent {
  manifest_version: string;
  verifier_id: string;
  profiles: Profile[];
  challenge_policy: ChallengePolicy;
  signing_key_fingerprint: string;
  profiles_digest: string;
}

export interface UnsignedManifest extends ManifestContent {
  published_at: number;
  expires_at: number;
}

export interface Manifest extends UnsignedManifest {
  signature: string;
}

/** Why a manifest is refused; each is a call error code of its own. */
export type ManifestRefusal = "MANIFEST_INVALID" | "MANIFEST_SIGNATURE_INVALID" | "MANIFEST_EXPIRED" | "MANIFEST_KEY_UNKNOWN";

export type ManifestCheck =
  | { ok: true; manifest: Manifest; manifestHash: string; kid: string }
  | { ok: false; code: ManifestRefusal; detail: string };

export const profilesDigest = (profiles: readonly Profile[]): Promise<string> => prefixedDigest(jcs(profiles));

export function manifestContent(m: ManifestContent): ManifestContent {
  const { manifest_version, verifier_id, profiles, challenge_policy, signing_key_fingerprint, profiles_digest } = m;
  return { manifest_version, verifier_id, profiles, challenge_policy, signing_key_fingerprint, profiles_digest };
}

export const manifestHash = (m: ManifestContent): Promise<string> => prefixedDigest(jcs(manifestContent(m)));

/** The bytes the signature covers: every member but `signature`. */
export function manifestSignedBytes(m: UnsignedManifest): Uint8Array {
  const { signature: _s, ...rest } = m as Manifest;
  return utf8(jcs(rest));
}

/** The content of a manifest declaring `profiles` for `verifierId` under the key `fingerprint`. */
export async function buildManifestContent(i: { verifierId: string; fingerprint: string; profiles: readonly Profile[]; challengePolicy: ChallengePolicy }): Promise<ManifestContent> {
  const profiles = i.profiles.map((p) => ({ id: p.id, comparison_scope: p.comparison_scope }));
  return {
    manifest_version: MANIFEST_VERSION,
    verifier_id: i.verifierId,
    profiles,
    challenge_policy: { ...i.challengePolicy },
    signing_key_fingerprint: i.fingerprint,
    profiles_digest: await profilesDigest(profiles),
  };
}

/**
 * The validity window containing `now`: windows start on multiples of `republishEvery` seconds and
 * last `ttl`, so every isolate signing at about the same time signs the same bytes (Ed25519 is
 * deterministic) and a poller's ETag changes only when the window or the content does.
 */
export function validityWindow(now: number, ttl: number, republishEvery: number): { published_at: number; expires_at: number } {
  const published_at = Math.floor(now / republishEvery) * republishEvery;
  return { published_at, expires_at: published_at + ttl };
}

export async function signManifest(content: ManifestContent, window: { published_at: number; expires_at: number }, sign: (message: Uint8Array) => Promise<Uint8Array>): Promise<Manifest> {
  const unsigned: UnsignedManifest = { ...manifestContent(content), published_at: window.published_at, expires_at: window.expires_at };
  return { ...unsigned, signature: toHex(await sign(manifestSignedBytes(unsigned))) };
}

/** Schema problems of a value presented as a manifest (or of a manifest's content), or none. */
export function manifestProblems(value: unknown): string[] {
  const check = validateManifest(value);
  if (!check.ok) return check.errors;
  const m = value as Manifest;
  // What every issuer is pinned as (the schema's pattern admits control characters and no host).
  if (!isHttpsUri(m.verifier_id)) return ["/verifier_id: must be an https:// URI with a host, without whitespace or control characters"];
  const ids = m.profiles.map((p) => p.id);
  if (new Set(ids).size !== ids.length) return ["/profiles: a profile id is listed twice"];
  return [];
}

export interface ManifestVerification {
  /** The pinned keys of the manifest's verifier. */
  keys: readonly TrustedKey[];
  now: number;
  /** Seconds a published_at may lie ahead of `now`. */
  skew: number;
  verifier: SignatureVerifier;
}

/**
 * Verifies a manifest: its form, that `signing_key_fingerprint` names a pinned key valid at
 * `published_at` and still valid at `now` (its not_after, no skew), the signature under that key, `profiles_digest`, and the validity window (after
 * published_at, at most MAX_MANIFEST_WINDOW long, published no later than `now` + `skew`, not
 * yet expired).
 * Every failure has its own code; the first found is answered.
 */
export async function verifyManifest(value: unknown, o: ManifestVerification): Promise<ManifestCheck> {
  const problems = manifestProblems(value);
  if (problems.length > 0) return { ok: false, code: "MANIFEST_INVALID", detail: problems.slice(0, 3).join("; ") };
  const m = value as Manifest;
  const key = keysValidAt([...o.keys], m.published_at).find((k) => k.fingerprint === m.signing_key_fingerprint);
  if (!key) return { ok: false, code: "MANIFEST_KEY_UNKNOWN", detail: `signing_key_fingerprint ${m.signing_key_fingerprint.slice(0, 16)} is not a pinned key of ${m.verifier_id} valid at published_at` };
  // As for a receipt's key, not_after is judged again at verification time, with no skew: a key
  // past its validity cannot vouch for a declaration by back-dating published_at.
  if (!keyValidNow(key.not_after, o.now)) return { ok: false, code: "MANIFEST_KEY_UNKNOWN", detail: `signing key ${key.kid}'s validity ended at not_after ${key.not_after}, before verification at ${o.now}` };
  const signed = await o.verifier.verify(key.raw, key.fingerprint, fromHex(m.signature)!, manifestSignedBytes(m));
  if (!signed) return { ok: false, code: "MANIFEST_SIGNATURE_INVALID", detail: `the signature does not verify under key ${key.kid}` };
  if (m.profiles_digest !== (await profilesDigest(m.profiles))) return { ok: false, code: "MANIFEST_INVALID", detail: "profiles_digest is not the digest of profiles" };
  if (m.expires_at <= m.published_at) return { ok: false, code: "MANIFEST_INVALID", detail: "expires_at is not after published_at" };
  if (m.expires_at - m.published_at > MAX_MANIFEST_WINDOW) return { ok: false, code: "MANIFEST_INVALID", detail: `the validity window (expires_at − published_at) exceeds ${MAX_MANIFEST_WINDOW} seconds` };
  if (m.published_at > o.now + o.skew) return { ok: false, code: "MANIFEST_INVALID", detail: "published_at lies in the future" };
  if (m.expires_at <= o.now) return { ok: false, code: "MANIFEST_EXPIRED", detail: `the manifest expired at ${m.expires_at}` };
  return { ok: true, manifest: m, manifestHash: await manifestHash(m), kid: key.kid };
}

/** Whether a signing key whose validity ends at `notAfter` (null: no end) is still valid at `now`; no skew, as for a receipt's key. */
export const keyValidNow = (notAfter: number | null, now: number): boolean => notAfter === null || now <= notAfter;

/** Whether a manifest is within its validity window at `now`. */
export const manifestCurrent = (m: UnsignedManifest, now: number, skew: number): boolean => m.published_at <= now + skew && now < m.expires_at;

/** Whether a manifest declares a profile. */
export const declares = (m: Pick<ManifestContent, "profiles">, profile: string): boolean => m.profiles.some((p) => p.id === profile);

const WINDOW_AND_SIGNATURE = ["published_at", "expires_at", "signature"];

/** Schema problems of a manifest's content (a manifest without its window and signature), or none. */
export function contentProblems(value: unknown): string[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return ["a manifest content must be a JSON object"];
  const extra = WINDOW_AND_SIGNATURE.filter((k) => Object.hasOwn(value, k));
  if (extra.length > 0) return [`a manifest content carries no ${extra.join(", ")}`];
  return manifestProblems({ ...value, published_at: 0, expires_at: 0, signature: "0".repeat(128) });
}

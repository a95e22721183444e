/**
 * Another verifier's manifest pinned beside its anchor: verified under the anchor's keys, kept
 * with the configurations known for the issuer, each bound to the profiles_digest of the manifest
 * its manifest_hash names, so the verification path can tell a receipt's manifest stale.
 */
import { validateManifestPin } from "../../../kv-schemas/index.js";
import type { AnchorRecord, TrustedKey } from "../anchors.js";
import { jcs, prefixedDigest } from "../digest.js";
import type { SignatureVerifier } from "../ed25519.js";
import { contentProblems, manifestHash, profilesDigest, verifyManifest, type Manifest, type ManifestContent, type ManifestRefusal } from "./manifest.js";

/** Configurations kept per issuer; beyond it the oldest binding is dropped (its receipts are then never told stale). */
export const MAX_MANIFEST_BINDINGS = 64;

export interface ManifestBindingRecord {
  config_hash: string;
  manifest_hash: string;
  profiles_digest: string;
}

/** The `manifest` member of an anchor record. */
export interface PinnedManifest {
  document: Manifest;
  manifest_hash: string;
  pinned_at: number;
  bindings: ManifestBindingRecord[];
}

export type ManifestPin =
  /** `added`: the bindings of the configurations given with this pin, which its write joins to the bindings held then. */
  | { kind: "pinned"; pinned: PinnedManifest; added: ManifestBindingRecord[] }
  | { kind: "refused"; code: ManifestRefusal | "MALFORMED_REQUEST" | "MANIFEST_SUPERSEDED"; detail: string };

interface PinBody {
  manifest: unknown;
  configurations?: { config: Record<string, unknown> & { manifest_hash: string }; config_hash?: string; manifest?: unknown }[];
}

/** The manifest's verifier_id, when the body names one; the route reads its anchor by it. */
export function pinnedVerifierId(body: unknown): string | null {
  const m = (body as { manifest?: { verifier_id?: unknown } } | null)?.manifest;
  return typeof m?.verifier_id === "string" ? m.verifier_id : null;
}

/**
 * Checks a `PUT /v1/admin/manifests` body against the issuer's anchor (`keys` are its pinned keys,
 * revoked ones already removed), refuses a manifest published before the one pinned
 * (MANIFEST_SUPERSEDED), and builds what is stored: the manifest, and the bindings of the
 * previous pin followed by the configurations given now (newest last, one per config_hash).
 */
export async function buildPinnedManifest(body: unknown, anchor: AnchorRecord, keys: readonly TrustedKey[], o: { now: number; skew: number; verifier: SignatureVerifier }): Promise<ManifestPin> {
  const shape = validateManifestPin(body);
  if (!shape.ok) {
    const inManifest = shape.errors.every((e) => e.startsWith("#/manifest"));
    return { kind: "refused", code: inManifest ? "MANIFEST_INVALID" : "MALFORMED_REQUEST", detail: shape.errors.slice(0, 3).join("; ") };
  }
  const pin = body as PinBody;
  const check = await verifyManifest(pin.manifest, { keys, now: o.now, skew: o.skew, verifier: o.verifier });
  if (!check.ok) return { kind: "refused", code: check.code, detail: check.detail };
  const manifest = check.manifest;
  if (manifest.verifier_id !== anchor.issuer) return { kind: "refused", code: "MANIFEST_KEY_UNKNOWN", detail: "verifier_id is not the pinned issuer" };
  // Never back in time: a manifest published before the pinned one is a declaration its verifier
  // has already replaced. The same published_at is accepted (the same document again, or one
  // re-signed within the same window after its declaration changed; the later pin wins).
  const held = anchor.manifest?.document;
  if (held && manifest.published_at < held.published_at) {
    return { kind: "refused", code: "MANIFEST_SUPERSEDED", detail: `the pinned manifest of ${anchor.issuer} was published at ${held.published_at}; this one, published at ${manifest.published_at}, is older` };
  }
  // A configuration may name the manifest being pinned, the one pinned before it (which this pin
  // replaces), or one a kept binding names; any other must come with its content.
  const known = new Map<string, string>([[check.manifestHash, manifest.profiles_digest]]);
  if (held) known.set(anchor.manifest!.manifest_hash, held.profiles_digest);
  for (const b of anchor.manifest?.bindings ?? []) known.set(b.manifest_hash, b.profiles_digest);
  const added: ManifestBindingRecord[] = [];
  for (const [i, c] of (pin.configurations ?? []).entries()) {
    const where = `configurations[${i}]`;
    const configHash = await prefixedDigest(jcs(c.config));
    if (c.config_hash !== undefined && c.config_hash !== configHash) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}: config_hash is not the hash of config` };
    let digest = known.get(c.config.manifest_hash);
    if (c.manifest !== undefined) {
      const problems = contentProblems(c.manifest);
      if (problems.length > 0) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}.manifest: ${problems[0]}` };
      const content = c.manifest as ManifestContent;
      if (content.verifier_id !== anchor.issuer) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}.manifest: verifier_id is not the pinned issuer` };
      if ((await manifestHash(content)) !== c.config.manifest_hash) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}: config.manifest_hash is not the hash of manifest` };
      if ((await profilesDigest(content.profiles)) !== content.profiles_digest) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}.manifest: profiles_digest is not the digest of profiles` };
      digest = content.profiles_digest;
    }
    if (digest === undefined) return { kind: "refused", code: "MALFORMED_REQUEST", detail: `${where}: config.manifest_hash names a manifest not known here; give its content as manifest` };
    added.push({ config_hash: configHash, manifest_hash: c.config.manifest_hash, profiles_digest: digest });
  }
  const bindings = joinBindings(anchor.manifest?.bindings ?? [], added);
  return { kind: "pinned", pinned: { document: manifest, manifest_hash: check.manifestHash, pinned_at: o.now, bindings }, added };
}

/**
 * The bindings held, less those the configurations given now replace, followed by these (newest
 * last), one per config_hash (a configuration given twice in one pin is bound once, at its last
 * place; 16 copies of one once left 16 bindings of it), the oldest dropped past
 * MAX_MANIFEST_BINDINGS.
 */
export function joinBindings(held: readonly ManifestBindingRecord[], added: readonly ManifestBindingRecord[]): ManifestBindingRecord[] {
  const fresh = new Set(added.map((b) => b.config_hash));
  const once = added.filter((b, i) => !added.slice(i + 1).some((later) => later.config_hash === b.config_hash));
  return [...held.filter((b) => !fresh.has(b.config_hash)), ...once].slice(-MAX_MANIFEST_BINDINGS);
}

/**
 * Until when a pinned manifest's signing key vouches for it: the key's not_after (null: no end),
 * or -Infinity when that key is no longer among the issuer's current keys (re-pinning and
 * revoking drop the manifest then; this keeps a record that somehow still holds one from being
 * read as current).
 */
export function manifestKeyValidUntil(record: Pick<AnchorRecord, "keys" | "manifest">): number | null {
  const fingerprint = record.manifest?.document.signing_key_fingerprint;
  const key = record.keys.find((k) => k.fingerprint === fingerprint);
  return key ? key.not_after : -Infinity;
}

/** What the verification path compares for a pinned issuer's receipt: the digest its configuration bound, and the current one. */
export function pinnedBinding(pinned: PinnedManifest | undefined, configHash: string): { bound: string; current: string } | null {
  const bound = pinned?.bindings.find((b) => b.config_hash === configHash);
  return pinned && bound ? { bound: bound.profiles_digest, current: pinned.document.profiles_digest } : null;
}

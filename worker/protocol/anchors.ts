/**
 * Trust anchors: the pinned Ed25519 keys of an issuer, as stored in KV `ANCHORS`.
 */
import { validateAnchorPin, validateAnchorRecord } from "../../kv-schemas/index.js";
import { sha256Hex } from "./digest.js";
import { fromBase64Url, utf8Length } from "./encoding.js";
import { publicKeyProblem } from "./ed25519.js";
import { DEFAULT_SEQUENCE_POLICY, type SequencePolicy } from "./ledger.js";
import { isHttpsUri, MAX_URI_BYTES } from "./receipt.js";
import type { PinnedManifest } from "./manifest/pinning.js";
import { DEFAULT_VERIFIER_CLASS, type AuditReference, type VerifierClass } from "./conformance/verifier-class.js";

export interface AnchorKey {
  kid: string;
  alg: "Ed25519";
  public_key: string;
  /** hex(SHA-256(raw key)); the first 16 hex are its short form. */
  fingerprint: string;
  not_before: number | null;
  not_after: number | null;
}

/** A key once pinned for the issuer and since replaced: kept so it can still be revoked. */
export interface PreviousKey {
  kid: string;
  fingerprint: string;
  unpinned_at: number;
}

export interface AnchorRecord {
  issuer: string;
  org_id: string | null;
  keys: AnchorKey[];
  pinned_at: number;
  /** IssuerLedger shards of this issuer (1 when absent); fixed once pinned. */
  ledger_shards?: number;
  /** How sequences are judged (`repeat` when absent); see SequencePolicy. */
  sequence_policy?: SequencePolicy;
  /** Keys pinned before and no longer in `keys`, newest last, at most MAX_PREVIOUS_KEYS. */
  previous_keys?: PreviousKey[];
  /** SEC-008: the config hashes this issuer's receipts may carry; any, when absent. */
  config_hashes?: string[];
  /** Whether this issuer's chain seals are trusted; absent is false. */
  chain_sealer?: boolean;
  /** The issuer's capability manifest, pinned beside the anchor (PUT /v1/admin/manifests). */
  manifest?: PinnedManifest;
  /** CCS §9 class of the issuer's verifier; C when absent. */
  verifier_class?: VerifierClass;
  /** The independent audit a Class B verifier names. */
  audit?: AuditReference;
  /** Level 0: the name of the Worker secret holding the issuer's HMAC key, never the key. */
  shared_secret?: { secret: string };
}

/** The history of replaced keys an anchor keeps; beyond it the oldest is dropped (KV's global revoked-key record still refuses it). */
export const MAX_PREVIOUS_KEYS = 256;

/** What verification needs of a pinned issuer. */
export interface PinnedIssuer {
  /** The issuer's organisation URI, when pinned with one. */
  orgId: string | null;
  keys: TrustedKey[];
  ledgerShards: number;
  sequencePolicy: SequencePolicy;
  /** Pinned config hashes (SEC-008), or null when none are pinned. */
  configHashes: string[] | null;
  /**
   * Whether a seal by this issuer may vouch for a chain. Pinning an issuer trusts its receipts;
   * a seal vouches for receipts of any issuer, so it is trusted only when pinned as a sealer.
   */
  chainSealer: boolean;
  /** The pinned manifest, when one is. */
  manifest: PinnedManifest | null;
  /** CCS §9 class (C when the anchor declares none). */
  verifierClass: VerifierClass;
  /** Level 0: the name of the Worker secret holding the issuer's HMAC key, or null. */
  sharedSecret: string | null;
}

/** A key ready to verify with: its raw bytes decoded once. */
export interface TrustedKey extends AnchorKey {
  raw: Uint8Array;
}

export const anchorKvKey = (issuer: string): string => `anchor:${issuer}`;
/** KV `ANCHORS` key of the global record of a revoked key, written on revoke, read on pin. */
export const revokedKeyKvKey = (fingerprint: string): string => `revoked-key:${fingerprint}`;
/**
 * A live chain's hop signed by a key since revoked, by its receipt hash (KV
 * `withdrawn-receipt:<receipt_hash>`), written when the revocation reaches the chain: a seal never
 * vouches for that receipt, under whatever chain_id a document presents it.
 */
export const withdrawnReceiptKvKey = (receiptHash: string): string => `withdrawn-receipt:${receiptHash}`;

/** Why a value cannot name an issuer (not a string, or longer than MAX_URI_BYTES), or null. */
export function issuerProblem(issuer: unknown): string | null {
  if (typeof issuer !== "string" || issuer.length === 0) return "issuer must be a non-empty string";
  if (issuer.length > MAX_URI_BYTES || utf8Length(issuer) > MAX_URI_BYTES) return `issuer must be at most ${MAX_URI_BYTES} UTF-8 bytes`;
  return null;
}

export type AnchorBuild =
  | { kind: "built"; record: AnchorRecord }
  | { kind: "invalid"; code: "ANCHOR_INVALID" | "ANCHOR_KEY_REJECTED"; errors: string[] };

/** Validates a pin request against its schema and every key against RFC 8032, then fingerprints. */
export async function buildAnchorRecord(body: unknown, now: number): Promise<AnchorBuild> {
  const check = validateAnchorPin(body);
  if (!check.ok) return { kind: "invalid", code: "ANCHOR_INVALID", errors: check.errors };
  const pin = body as { issuer: string; org_id?: string | null; ledger_shards?: number; sequence_policy?: SequencePolicy; config_hashes?: string[]; chain_sealer?: boolean; verifier_class?: VerifierClass; audit?: AuditReference; shared_secret?: { secret: string }; keys: (Omit<AnchorKey, "fingerprint"> & { fingerprint?: string })[] };
  const errors: string[] = [];
  const tooLong = issuerProblem(pin.issuer);
  if (tooLong) errors.push(tooLong);
  // Pinned only as receipts can name it: an issuer no receipt could carry would hold its keys for nothing.
  else if (!isHttpsUri(pin.issuer)) errors.push("issuer must be an https:// URI with a host, as receipts name their issuer");
  // A sharded issuer's ledgers are named <issuer>#k: an issuer holding # could be one of them and
  // share its ledger (its nonces, revocations and key uses) with another issuer.
  else if (pin.issuer.includes("#")) errors.push("issuer must not hold # (a fragment): an issuer's ledger shards are named <issuer>#k");
  if (pin.org_id != null && !isHttpsUri(pin.org_id)) errors.push("org_id must be an https:// URI with a host");
  const kids = new Set<string>();
  const keys: AnchorKey[] = [];
  for (const key of pin.keys) {
    if (kids.has(key.kid)) errors.push(`kid ${key.kid}: listed twice`);
    kids.add(key.kid);
    const nb = key.not_before ?? null;
    const na = key.not_after ?? null;
    if (nb !== null && na !== null && na < nb) errors.push(`kid ${key.kid}: not_after is before not_before`);
    const raw = fromBase64Url(key.public_key);
    const problem = raw === null ? "public_key is not canonical base64url" : publicKeyProblem(raw);
    if (problem) {
      errors.push(`kid ${key.kid}: ${problem}`);
      continue;
    }
    const fingerprint = await sha256Hex(raw!);
    if (key.fingerprint !== undefined && key.fingerprint !== fingerprint) {
      errors.push(`kid ${key.kid}: fingerprint does not match the listed key`);
      continue;
    }
    keys.push({ kid: key.kid, alg: "Ed25519", public_key: key.public_key, fingerprint, not_before: nb, not_after: na });
  }
  if (pin.sequence_policy === "window" && (pin.ledger_shards ?? 1) > 1) {
    errors.push('sequence_policy "window" needs ledger_shards 1: a window kept per shard would judge each shard\'s sequences alone');
  }
  if (errors.length > 0) {
    const keyRejected = errors.some((e) => /public_key|public key/.test(e));
    return { kind: "invalid", code: keyRejected ? "ANCHOR_KEY_REJECTED" : "ANCHOR_INVALID", errors };
  }
  const record: AnchorRecord = {
    issuer: pin.issuer,
    org_id: pin.org_id ?? null,
    keys,
    pinned_at: now,
    ledger_shards: pin.ledger_shards ?? 1,
    sequence_policy: pin.sequence_policy ?? DEFAULT_SEQUENCE_POLICY,
    ...(pin.config_hashes ? { config_hashes: pin.config_hashes } : {}),
    ...(pin.chain_sealer ? { chain_sealer: true } : {}),
    ...(pin.verifier_class ? { verifier_class: pin.verifier_class } : {}),
    ...(pin.audit ? { audit: pin.audit } : {}),
    ...(pin.shared_secret ? { shared_secret: pin.shared_secret } : {}),
  };
  return { kind: "built", record };
}

/**
 * `next` with the key history of the record it replaces: every key pinned before and not in
 * `next.keys` joins `previous_keys` (a key pinned again leaves it). Answers the keys this pin
 * unpins, whose sequence state the ledgers drop.
 */
export function carryKeyHistory(next: AnchorRecord, previous: AnchorRecord | null, now: number): { record: AnchorRecord; unpinned: PreviousKey[] } {
  const current = new Set(next.keys.map((k) => k.fingerprint));
  const unpinned = (previous?.keys ?? []).filter((k) => !current.has(k.fingerprint)).map((k) => ({ kid: k.kid, fingerprint: k.fingerprint, unpinned_at: now }));
  const gone = new Set(unpinned.map((k) => k.fingerprint));
  const history = [...(previous?.previous_keys ?? []).filter((k) => !current.has(k.fingerprint) && !gone.has(k.fingerprint)), ...unpinned];
  const previous_keys = history.slice(-MAX_PREVIOUS_KEYS);
  return { record: previous_keys.length > 0 ? { ...next, previous_keys } : next, unpinned };
}

/** Every key ever pinned for the issuer, current ones first, as {kid, fingerprint}. */
export function keysEverPinned(record: AnchorRecord): { kid: string; fingerprint: string }[] {
  return [...record.keys, ...(record.previous_keys ?? [])].map(({ kid, fingerprint }) => ({ kid, fingerprint }));
}

/** Reads a stored record back, refusing anything that does not match the stored schema. */
export function readAnchorRecord(value: unknown): AnchorRecord {
  const check = validateAnchorRecord(value);
  if (!check.ok) throw new Error(`stored anchor does not match its schema: ${check.errors.join("; ")}`);
  return value as AnchorRecord;
}

export function pinnedIssuer(record: AnchorRecord): PinnedIssuer {
  return {
    orgId: record.org_id,
    keys: record.keys.map((k) => ({ ...k, raw: fromBase64Url(k.public_key)! })),
    ledgerShards: record.ledger_shards ?? 1,
    sequencePolicy: record.sequence_policy ?? DEFAULT_SEQUENCE_POLICY,
    configHashes: record.config_hashes ?? null,
    chainSealer: record.chain_sealer === true,
    manifest: record.manifest ?? null,
    verifierClass: record.verifier_class ?? DEFAULT_VERIFIER_CLASS,
    sharedSecret: record.shared_secret?.secret ?? null,
  };
}

/** The keys whose validity window contains `issuedAt` (bounds inclusive). */
export function keysValidAt<K extends Pick<AnchorKey, "not_before" | "not_after">>(keys: K[], issuedAt: number): K[] {
  return keys.filter((k) => (k.not_before === null || k.not_before <= issuedAt) && (k.not_after === null || issuedAt <= k.not_after));
}

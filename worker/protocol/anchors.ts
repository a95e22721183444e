/**
 * Trust anchors: the pinned Ed25519 keys of an issuer, as stored in KV `ANCHORS`.
 */
import { validateAnchorPin, validateAnchorRecord } from "../../kv-schemas/index.js";
import { sha256Hex } from "./digest.js";
import { fromBase64Url } from "./encoding.js";
import { publicKeyProblem } from "./ed25519.js";

export interface AnchorKey {
  kid: string;
  alg: "Ed25519";
  public_key: string;
  /** hex(SHA-256(raw key)); the first 16 hex are its short form. */
  fingerprint: string;
  not_before: number | null;
  not_after: number | null;
}

export interface AnchorRecord {
  issuer: string;
  org_id: string | null;
  keys: AnchorKey[];
  pinned_at: number;
  /** IssuerLedger shards of this issuer (1 when absent); fixed once pinned. */
  ledger_shards?: number;
  /** SEC-008: the config hashes this issuer's receipts may carry; any, when absent. */
  config_hashes?: string[];
}

/** What verification needs of a pinned issuer. */
export interface PinnedIssuer {
  /** The issuer's organisation URI, when pinned with one. */
  orgId: string | null;
  keys: TrustedKey[];
  ledgerShards: number;
  /** Pinned config hashes (SEC-008), or null when none are pinned. */
  configHashes: string[] | null;
}

/** A key ready to verify with: its raw bytes decoded once. */
export interface TrustedKey extends AnchorKey {
  raw: Uint8Array;
}

export const anchorKvKey = (issuer: string): string => `anchor:${issuer}`;

export type AnchorBuild =
  | { kind: "built"; record: AnchorRecord }
  | { kind: "invalid"; code: "ANCHOR_INVALID" | "ANCHOR_KEY_REJECTED"; errors: string[] };

/** Validates a pin request against its schema and every key against RFC 8032, then fingerprints. */
export async function buildAnchorRecord(body: unknown, now: number): Promise<AnchorBuild> {
  const check = validateAnchorPin(body);
  if (!check.ok) return { kind: "invalid", code: "ANCHOR_INVALID", errors: check.errors };
  const pin = body as { issuer: string; org_id?: string | null; ledger_shards?: number; config_hashes?: string[]; keys: (Omit<AnchorKey, "fingerprint"> & { fingerprint?: string })[] };
  const errors: string[] = [];
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
  if (errors.length > 0) {
    const keyRejected = errors.some((e) => /public_key|public key/.test(e));
    return { kind: "invalid", code: keyRejected ? "ANCHOR_KEY_REJECTED" : "ANCHOR_INVALID", errors };
  }
  return { kind: "built", record: { issuer: pin.issuer, org_id: pin.org_id ?? null, keys, pinned_at: now, ledger_shards: pin.ledger_shards ?? 1, ...(pin.config_hashes ? { config_hashes: pin.config_hashes } : {}) } };
}

/** Reads a stored record back, refusing anything that does not match the stored schema. */
export function readAnchorRecord(value: unknown): AnchorRecord {
  const check = validateAnchorRecord(value);
  if (!check.ok) throw new Error(`stored anchor does not match its schema: ${check.errors.join("; ")}`);
  return value as AnchorRecord;
}

export function pinnedIssuer(record: AnchorRecord): PinnedIssuer {
  return { orgId: record.org_id, keys: record.keys.map((k) => ({ ...k, raw: fromBase64Url(k.public_key)! })), ledgerShards: record.ledger_shards ?? 1, configHashes: record.config_hashes ?? null };
}

/** The keys whose validity window contains `issuedAt`. */
export function keysValidAt(keys: TrustedKey[], issuedAt: number): TrustedKey[] {
  return keys.filter((k) => (k.not_before === null || k.not_before <= issuedAt) && (k.not_after === null || issuedAt <= k.not_after));
}

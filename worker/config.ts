import type { FreshnessPolicy } from "./protocol/checks/freshness.js";
import { DEFAULT_FRESHNESS } from "./protocol/checks/freshness.js";
import type { Env } from "./env.js";
import { parseSigningIdentity, type SigningIdentity } from "./protocol/issuing/identity.js";
import { utf8 } from "./protocol/encoding.js";
import { MIN_SHARD_KEY_LENGTH } from "./protocol/ledger.js";
import { DEFAULT_FLUSH, type FlushPolicy } from "./metrics.js";
import { DEFAULT_REVIEW_THRESHOLD } from "./protocol/conformance/verifier-class.js";
import { canonicalConfig, configHash } from "./protocol/issuing/config.js";
import { jcs } from "./protocol/digest.js";
import type { IssuingContext } from "./protocol/issuing/lifecycle.js";
import { DEFAULT_POLICY_FLOOR, isSecurityProfile } from "./protocol/issuing/policy-floor.js";
import { webCryptoSigner, type ReceiptSigner } from "./protocol/issuing/signer.js";
import { SHA256_REF } from "./protocol/encoding.js";
import { buildManifestContent, manifestHash, MAX_MANIFEST_WINDOW, signManifest, validityWindow, type ChallengePolicy, type Manifest, type ManifestContent } from "./protocol/manifest/manifest.js";
import { COUNTERSIGN_PROFILES, PROFILE_IDS } from "./protocol/manifest/profiles.js";

/** Largest accepted body of a verification call: params 64 KB + runtime context 16 KB + response + receipt, with room. */
export const MAX_VERIFY_BODY = 256 * 1024;
/**
 * Largest accepted chain document (POST /v1/chains/verify): 16 hops, each a receipt (~1.2 KB)
 * with the runtime context it binds, which intake signs up to 16 KiB canonical (plus its
 * delegation): about 285 KB in all, so twice the verification body, with room for whitespace.
 */
export const MAX_CHAIN_BODY = 512 * 1024;
export const MAX_ADMIN_BODY = 64 * 1024;
/** Largest accepted body of a usage or cost call: a receipt, a price source or an estimate and what rides on it. */
export const MAX_USAGE_BODY = 64 * 1024;
export const DEFAULT_DEPENDENCY_TIMEOUT_MS = 2_000;

const positive = (text: string | undefined, fallback: number): number => {
  const n = Number(text);
  return text !== undefined && text !== "" && Number.isFinite(n) && n >= 0 ? n : fallback;
};

let audiencesText: string | undefined;
let audiencesSet = new Set<string>();

/** The audiences this deployment serves (AUDIENCES, comma-separated); parsed again only when the text changes. */
export function audiences(env: Env): ReadonlySet<string> {
  const text = env.AUDIENCES ?? "";
  if (text !== audiencesText) {
    audiencesText = text;
    audiencesSet = new Set(text.split(",").map((a) => a.trim()).filter(Boolean));
  }
  return audiencesSet;
}

export function freshnessPolicy(env: Env): FreshnessPolicy {
  return {
    maxLifetime: positive(env.MAX_RECEIPT_LIFETIME, DEFAULT_FRESHNESS.maxLifetime),
    skewCap: positive(env.MAX_CLOCK_SKEW, DEFAULT_FRESHNESS.skewCap),
  };
}

export const dependencyTimeout = (env: Env): number => positive(env.DEPENDENCY_TIMEOUT_MS, DEFAULT_DEPENDENCY_TIMEOUT_MS);

/** When an isolate flushes its batched counts: DECISION_FLUSH_MS (0 flushes every decision, for a test instance) or the default 10 s. */
export const decisionFlush = (env: Env): FlushPolicy => ({ ...DEFAULT_FLUSH, everyMs: positive(env.DECISION_FLUSH_MS, DEFAULT_FLUSH.everyMs) });

/** CCS 13.7: allow-only verdicts that flag an issuer for review, REVIEW_ALLOW_ONLY_THRESHOLD (a positive integer) or the draft's 10,000. */
export const reviewThreshold = (env: Env): number => {
  const n = Number(env.REVIEW_ALLOW_ONLY_THRESHOLD);
  return Number.isSafeInteger(n) && n >= 1 ? n : DEFAULT_REVIEW_THRESHOLD;
};

/** A deployment whose configuration is broken: a 500 that names what to fix, never a secret. */
export class ConfigurationError extends Error {}

const identities = new WeakMap<Env, SigningIdentity>();

/** This deployment's signing identity, parsed once per environment; throws ConfigurationError when it is not configured. */
export function signingIdentity(env: Env): SigningIdentity {
  const known = identities.get(env);
  if (known) return known;
  const parsed = parseSigningIdentity(env);
  if (!parsed.ok) throw new ConfigurationError(`this deployment's signing identity is not configured: ${parsed.problems.join("; ")}`);
  identities.set(env, parsed.identity);
  return parsed.identity;
}

let shardKeyText: string | undefined;
let shardKeyBytes: Uint8Array | null = null;

/**
 * The HMAC key of the shard choice (LEDGER_SHARD_KEY, UTF-8 bytes), or null when it is unset or
 * shorter than MIN_SHARD_KEY_LENGTH: sharded issuers are then refused, never sharded unkeyed.
 */
export function ledgerShardKey(env: Env): Uint8Array | null {
  const text = env.LEDGER_SHARD_KEY;
  if (text !== shardKeyText) {
    shardKeyText = text;
    shardKeyBytes = text !== undefined && text.length >= MIN_SHARD_KEY_LENGTH ? utf8(text) : null;
  }
  return shardKeyBytes;
}

export const DEFAULT_RECEIPT_TTL = 60;
export const DEFAULT_INTAKE_TIMEOUT_MS = 5_000;
/** Largest intake body read: twice the 128 KB canonical limit, so whitespace never decides; the canonical limit is checked after parsing. */
export const MAX_INTAKE_BODY = 256 * 1024;

export const intakeTimeout = (env: Env): number => positive(env.INTAKE_TIMEOUT_MS, DEFAULT_INTAKE_TIMEOUT_MS);

export const DEFAULT_JOURNAL_SHARDS = 8;
export const MAX_JOURNAL_SHARDS = 64;
export const DEFAULT_LEASE_SECONDS = 300;

/** An integer variable in `min..max`, `fallback` when unset or empty; anything else is a ConfigurationError. */
function integerSetting(env: Env, name: "JOURNAL_SHARDS" | "JOURNAL_LEASE_SECONDS", fallback: number, min: number, max: number): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

/** Shards per journal tenant: JOURNAL_SHARDS, an integer 1..64; anything else is a ConfigurationError. */
export const journalShards = (env: Env): number => integerSetting(env, "JOURNAL_SHARDS", DEFAULT_JOURNAL_SHARDS, 1, MAX_JOURNAL_SHARDS);

/** A started record's lease: JOURNAL_LEASE_SECONDS, an integer 1..3600 (default 300), judged as JOURNAL_SHARDS is. */
export const leaseSeconds = (env: Env): number => integerSetting(env, "JOURNAL_LEASE_SECONDS", DEFAULT_LEASE_SECONDS, 1, 3600);

const list = (text: string | undefined): string[] => (text ?? "").split(",").map((a) => a.trim()).filter(Boolean);

/** A signed manifest is re-signed for a new window this often (seconds), whatever its TTL. */
export const MANIFEST_REPUBLISH_SECONDS = 86_400;
export const DEFAULT_MANIFEST_TTL = 7 * 86_400;
export const DEFAULT_CHALLENGE_POLICY: ChallengePolicy = { base_duration: 60, deadline_multiplier: 5, max_deadline: 600 };

/** This deployment's capability manifest: its content (what manifest_hash covers) and the signed document of a window. */
export interface OwnManifest {
  content: ManifestContent;
  hash: string;
  ttl: number;
  /** The manifest signed for the validity window containing `now` (signed once per window per isolate), with its canonical text. */
  signed(now: number): Promise<{ manifest: Manifest; text: string }>;
}

/** What this deployment issues with: its identity and signer, the issuing context (canonical configuration and its hash), and its manifest. */
export interface Issuing {
  identity: SigningIdentity;
  signer: ReceiptSigner;
  context: IssuingContext;
  manifest: OwnManifest;
}

const issuings = new WeakMap<Env, Promise<Issuing>>();

/** Built once per environment; a broken configuration is a ConfigurationError (500), never a receipt. */
export function issuing(env: Env): Promise<Issuing> {
  let known = issuings.get(env);
  if (!known) {
    known = buildIssuing(env);
    issuings.set(env, known);
    known.catch(() => issuings.delete(env));
  }
  return known;
}

async function buildIssuing(env: Env): Promise<Issuing> {
  const identity = signingIdentity(env);
  const floor = env.POLICY_FLOOR || DEFAULT_POLICY_FLOOR;
  if (!isSecurityProfile(floor)) throw new ConfigurationError("POLICY_FLOOR must be one of none, tls, authenticated, mutual-tls, attested");
  const pinned = list(env.PINNED_CONFIG_HASHES);
  if (pinned.some((h) => !SHA256_REF.test(h))) throw new ConfigurationError('PINNED_CONFIG_HASHES must list "sha256:" + 64 hex values');
  const signer = webCryptoSigner(identity);
  const manifest = await ownManifest(env, identity, signer);
  let config;
  try {
    config = await canonicalConfig({ signingKeyId: identity.kid, rules: env.RULES ? list(env.RULES) : undefined, policyFloor: floor, manifestHash: manifest.hash, serverProfileRequired: env.POLICY_FLOOR_REQUIRES_PROFILE === "true" });
  } catch (err) {
    throw new ConfigurationError(`RULES: ${(err as Error).message}`);
  }
  return {
    identity,
    signer,
    manifest,
    context: {
      issuer: identity.issuer,
      config,
      configHash: await configHash(config),
      ttl: receiptTtl(env),
      maxClockSkew: freshnessPolicy(env).skewCap,
      pinnedConfigHashes: pinned.length > 0 ? pinned : null,
    },
  };
}

/**
 * RECEIPT_TTL: a receipt's lifetime must be one this deployment's own verification accepts, above 0
 * and within MAX_RECEIPT_LIFETIME (its default, 60, included); anything else is a ConfigurationError,
 * never a receipt signed only to be refused FRESHNESS_EXPIRED.
 */
function receiptTtl(env: Env): number {
  const max = freshnessPolicy(env).maxLifetime;
  const ttl = setting(env, "RECEIPT_TTL", DEFAULT_RECEIPT_TTL, max);
  if (ttl > max) throw new ConfigurationError(`RECEIPT_TTL (default ${DEFAULT_RECEIPT_TTL}) must be at most MAX_RECEIPT_LIFETIME (${max})`);
  return ttl;
}

/** A positive number of a variable, its default when unset; anything else is a ConfigurationError naming it. */
function setting(env: Env, name: keyof Env, fallback: number, max: number): number {
  const text = env[name] as string | undefined;
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  if (!(Number.isFinite(n) && n > 0 && n <= max)) throw new ConfigurationError(`${name} must be a number above 0 and at most ${max}`);
  return n;
}

async function ownManifest(env: Env, identity: SigningIdentity, signer: ReceiptSigner): Promise<OwnManifest> {
  const declared = env.PROFILES ? list(env.PROFILES) : PROFILE_IDS;
  const unknown = declared.filter((p) => !PROFILE_IDS.includes(p));
  if (unknown.length > 0) throw new ConfigurationError(`PROFILES: unknown profiles: ${unknown.join(", ")}`);
  // Other verifiers refuse a window longer than MAX_MANIFEST_WINDOW, so this one never signs one.
  const ttl = setting(env, "MANIFEST_TTL", DEFAULT_MANIFEST_TTL, MAX_MANIFEST_WINDOW);
  if (ttl < 2 * MANIFEST_REPUBLISH_SECONDS) throw new ConfigurationError(`MANIFEST_TTL must be at least ${2 * MANIFEST_REPUBLISH_SECONDS} seconds`);
  const challengePolicy: ChallengePolicy = {
    base_duration: setting(env, "CHALLENGE_BASE_DURATION", DEFAULT_CHALLENGE_POLICY.base_duration, 86_400),
    deadline_multiplier: setting(env, "CHALLENGE_DEADLINE_MULTIPLIER", DEFAULT_CHALLENGE_POLICY.deadline_multiplier, 1000),
    max_deadline: setting(env, "CHALLENGE_MAX_DEADLINE", DEFAULT_CHALLENGE_POLICY.max_deadline, 86_400),
  };
  const content = await buildManifestContent({
    verifierId: identity.issuer,
    fingerprint: identity.fingerprint,
    profiles: COUNTERSIGN_PROFILES.filter((p) => declared.includes(p.id)),
    challengePolicy,
  });
  let last: { publishedAt: number; signed: Promise<{ manifest: Manifest; text: string }> } | null = null;
  return {
    content,
    hash: await manifestHash(content),
    ttl,
    signed(now) {
      const window = validityWindow(now, ttl, MANIFEST_REPUBLISH_SECONDS);
      if (last?.publishedAt !== window.published_at) {
        const signed = signManifest(content, window, (m) => signer.sign(m)).then((manifest) => ({ manifest, text: jcs(manifest) }));
        last = { publishedAt: window.published_at, signed };
        signed.catch(() => (last = null));
      }
      return last.signed;
    },
  };
}

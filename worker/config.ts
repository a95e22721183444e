import type { FreshnessPolicy } from "./protocol/checks/freshness.js";
import { DEFAULT_FRESHNESS } from "./protocol/checks/freshness.js";
import type { Env } from "./env.js";
import { parseSigningIdentity, type SigningIdentity } from "./protocol/issuing/identity.js";
import { utf8 } from "./protocol/encoding.js";
import { MIN_SHARD_KEY_LENGTH } from "./protocol/ledger.js";

/** Largest accepted body of a verification call: params 64 KB + runtime context 16 KB + response + receipt, with room. */
export const MAX_VERIFY_BODY = 256 * 1024;
export const MAX_ADMIN_BODY = 64 * 1024;
/** Largest accepted body of a usage or cost call: a receipt, a price source or an estimate and what rides on it. */
export const MAX_USAGE_BODY = 64 * 1024;
export const DEFAULT_DEPENDENCY_TIMEOUT_MS = 2_000;

const positive = (text: string | undefined, fallback: number): number => {
  const n = Number(text);
  return text !== undefined && text !== "" && Number.isFinite(n) && n >= 0 ? n : fallback;
};

export function audiences(env: Env): Set<string> {
  return new Set((env.AUDIENCES ?? "").split(",").map((a) => a.trim()).filter(Boolean));
}

export function freshnessPolicy(env: Env): FreshnessPolicy {
  return {
    maxLifetime: positive(env.MAX_RECEIPT_LIFETIME, DEFAULT_FRESHNESS.maxLifetime),
    skewCap: positive(env.MAX_CLOCK_SKEW, DEFAULT_FRESHNESS.skewCap),
  };
}

export const dependencyTimeout = (env: Env): number => positive(env.DEPENDENCY_TIMEOUT_MS, DEFAULT_DEPENDENCY_TIMEOUT_MS);

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

/**
 * Manifests and configuration history on Workers storage. This deployment's configurations are
 * kept in KV `ANCHORS` at `config:<config_hash>` (kv-schemas/config-record.schema.json), written
 * once per isolate when it first issues under one and never changed, so any receipt it ever
 * issued can have its configuration (and the manifest content it bound) looked up. Only intake,
 * behind INTAKE_TOKEN, writes here, and only the deployment's own configurations: nobody else
 * can make it grow. Other verifiers' manifests live in their anchor records.
 */
import { validateConfigRecord } from "../kv-schemas/index.js";
import type { Env } from "./env.js";
import { ConfigurationError, issuing, signingIdentity, type Issuing } from "./config.js";
import { withTimeout } from "./http.js";
import type { CanonicalConfig } from "./protocol/issuing/config.js";
import type { ManifestContent } from "./protocol/manifest/manifest.js";
import { pinnedBinding } from "./protocol/manifest/pinning.js";
import type { ManifestBinding } from "./protocol/manifest/staleness.js";
import type { AnchorStore } from "./stores.js";

export interface ConfigRecord {
  config_hash: string;
  config: CanonicalConfig;
  /** The content of the manifest config.manifest_hash names. */
  manifest: ManifestContent;
  first_issued_at: number;
}

export const configKvKey = (hash: string): string => `config:${hash}`;

/** Configurations read back this isolate: they never change, so a hit is kept (bounded). */
export type ConfigCache = Map<string, ConfigRecord>;
const CONFIG_CACHE_ENTRIES = 256;

export interface ManifestStore {
  /** Records the current configuration, once per isolate; awaited before a receipt under it is answered. */
  recordCurrent(now: number): Promise<void>;
  /** A configuration this deployment issued under (the current one always), or null. */
  configuration(hash: string): Promise<ConfigRecord | null>;
  /** The profiles_digest a receipt's configuration bound and the issuer's current one, when both are known here. */
  binding(issuer: string, configHash: string): Promise<ManifestBinding | null>;
}

export function kvManifestStore(env: Env, timeoutMs: number, anchors: AnchorStore, cache: ConfigCache, recorded: Set<string>): ManifestStore {
  const kv = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "configuration history");
  const current = async (): Promise<ConfigRecord> => {
    const { context, manifest } = await issuing(env);
    return { config_hash: context.configHash, config: context.config, manifest: manifest.content, first_issued_at: 0 };
  };
  const configuration = async (hash: string): Promise<ConfigRecord | null> => {
    const now = await current();
    if (hash === now.config_hash) return now;
    const hit = cache.get(hash);
    if (hit) return hit;
    const raw = await kv(env.ANCHORS.get(configKvKey(hash), "json"));
    if (raw === null) return null;
    const check = validateConfigRecord(raw);
    if (!check.ok) throw new Error(`stored configuration does not match its schema: ${check.errors.join("; ")}`);
    if (cache.size >= CONFIG_CACHE_ENTRIES) cache.clear();
    cache.set(hash, raw as ConfigRecord);
    return raw as ConfigRecord;
  };
  return {
    async recordCurrent(now) {
      const record = await current();
      if (recorded.has(record.config_hash)) return;
      await kv(env.ANCHORS.put(configKvKey(record.config_hash), JSON.stringify({ ...record, first_issued_at: Math.floor(now) })));
      recorded.add(record.config_hash);
    },
    configuration,
    async binding(issuer, configHash) {
      const own = await issuingIfConfigured(env);
      if (issuer !== own?.identity.issuer) return pinnedBinding((await anchors.get(issuer))?.manifest, configHash);
      const record = await configuration(configHash);
      return record ? { bound: record.manifest.profiles_digest, current: own.manifest.content.profiles_digest } : null;
    },
  };
}

/** This deployment's issuing, or null when it is not configured to sign (a verification-only deployment). */
export async function issuingIfConfigured(env: Env): Promise<Issuing | null> {
  try {
    return await issuing(env);
  } catch (err) {
    if (err instanceof ConfigurationError) return null;
    throw err;
  }
}

/**
 * This deployment's issuing for the routes that show its manifest, or null when it has no signing
 * identity (a verification-only deployment publishes none). Any other configuration error
 * (MANIFEST_TTL, PROFILES, the challenge settings, RULES, POLICY_FLOOR) is thrown, as
 * `/.well-known/ccs-manifest` throws it: a broken configuration is SERVICE_MISCONFIGURED, never
 * passed off as having no identity.
 */
export async function publishedIssuing(env: Env): Promise<Issuing | null> {
  try {
    signingIdentity(env);
  } catch (err) {
    if (err instanceof ConfigurationError) return null;
    throw err;
  }
  return issuing(env);
}

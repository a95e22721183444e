/**
 * The service's own routes, run offline in this process: in-memory KV and ledgers, @noble/ed25519
 * (RFC 8032 strict) for signatures, the anchors the caller trusts pinned through the admin route.
 * So the CLI answers with exactly the service's codes and JSON, and needs no network.
 */
import { createApp } from "../worker/app.js";
import { toHex } from "../worker/protocol/encoding.js";
import { nobleVerifier } from "../worker/protocol/ed25519.js";
import { isJsonObject } from "../worker/protocol/strict-json.js";
import { nodeEnv } from "./offline-env.js";
import { MAX_AUDIENCES_PER_PARTY } from "../worker/protocol/relying-parties.js";

/**
 * A trust file: `{anchors: [pin bodies], revoked?: [{issuer, kid | fingerprint}], manifests?: [manifest pin bodies]}`,
 * a bare list of pin bodies, or one pin body (what `/.well-known/ccs-issuer` serves).
 */
export interface TrustFile {
  anchors: unknown[];
  revoked: Record<string, unknown>[];
  /** Bodies of PUT /v1/admin/manifests, pinned after the anchors (MANIFEST_STALE needs them). */
  manifests: unknown[];
}

export class UsageError extends Error {}

const TRUST_FILE_MEMBERS = ["anchors", "revoked", "manifests"];

export function readTrustFile(value: unknown): TrustFile {
  if (Array.isArray(value)) return { anchors: value, revoked: [], manifests: [] };
  if (isJsonObject(value) && Array.isArray(value.anchors)) {
    // A member of another name is a mistake, never ignored: `revoke` or `revocations` for
    // `revoked` would otherwise leave the key trusted, and its receipts judged valid.
    const unknown = Object.keys(value).find((k) => !TRUST_FILE_MEMBERS.includes(k));
    if (unknown !== undefined) throw new UsageError(`anchors file: unknown member ${JSON.stringify(unknown)} (a trust file has ${TRUST_FILE_MEMBERS.join(", ")})`);
    const revoked = value.revoked ?? [];
    if (!Array.isArray(revoked) || !revoked.every(isJsonObject)) throw new UsageError("anchors file: revoked must be a list of {issuer, kid | fingerprint}");
    // Each entry's form is judged here, for `manifest verify` too, which reads the list itself
    // (`verify` has the admin route judge it): {issuer, kidd} named no key and was skipped there.
    for (const r of revoked) {
      const names = Object.keys(r);
      const form = names.length === 2 && typeof r.issuer === "string" && (typeof r.kid === "string" || typeof r.fingerprint === "string");
      if (!form) throw new UsageError(`anchors file: each revoked entry must be {issuer, kid} or {issuer, fingerprint}, not ${JSON.stringify(r).slice(0, 200)}`);
    }
    const manifests = value.manifests ?? [];
    if (!Array.isArray(manifests)) throw new UsageError("anchors file: manifests must be a list of {manifest, configurations?}");
    return { anchors: value.anchors, revoked, manifests };
  }
  if (isJsonObject(value) && typeof value.issuer === "string") return { anchors: [value], revoked: [], manifests: [] };
  throw new UsageError("anchors file must be {anchors: [...], revoked?: [...]}, a list of anchors, or one anchor");
}

export interface OfflineOptions {
  trust: TrustFile;
  /** The audiences calls may speak for (the relying party's). */
  audiences: string[];
  /** This side's organisation, for cross-org envelopes. */
  orgId?: string;
  /** Unix seconds; default the wall clock. */
  now?: () => number;
  /** The shared secrets (Level 0) the trust file's anchors name, by name: the relying party's own, from its environment. */
  secrets?: Record<string, string>;
}

/** The secrets a trust file's anchors name (`shared_secret.secret`) that `env` holds: a relying party verifies Level 0 with its own. */
export function sharedSecretsOf(trust: TrustFile, env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of trust.anchors) {
    const name = isJsonObject(a) && isJsonObject(a.shared_secret) ? a.shared_secret.secret : undefined;
    if (typeof name === "string" && env[name] !== undefined) out[name] = env[name]!;
  }
  return out;
}

export interface OfflineAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface OfflineVerifier {
  /** Sends a call body, as text, to a route of the offline service, as the party registered for `audience` (the first party when none or another). */
  post(path: string, body: string, audience?: string): Promise<OfflineAnswer>;
}

const NO_AUDIENCE = "https://offline.invalid";
const randomToken = () => "offline-" + toHex(crypto.getRandomValues(new Uint8Array(24)));

/** Builds the offline service and pins the trust file into it; a refused anchor is a usage error. */
export async function offlineVerifier(o: OfflineOptions): Promise<OfflineVerifier> {
  const admin = randomToken();
  const party = randomToken();
  // Chain calls speak for no audience, but the routes still want a relying party with one.
  const audiences = o.audiences.length > 0 ? o.audiences : [NO_AUDIENCE];
  const { env, ledgerStub, ctx } = nodeEnv({ ...o.secrets, ADMIN_TOKEN: admin, AUDIENCES: audiences.join(","), ORG_ID: o.orgId });
  // The service's decision log line and observability projection are a deployment's logs; offline,
  // stdout carries the command's own answer alone (`--json` promises one document).
  const app = createApp({ now: o.now, verifier: nobleVerifier, ledgerStub, logLine: () => {}, exporter: () => {} });
  const send = async (method: string, path: string, body: unknown, token: string): Promise<OfflineAnswer> => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const res = await app.request(path, { method, headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: text }, env, ctx);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  for (const anchor of o.trust.anchors) {
    const pinned = await send("PUT", "/v1/admin/anchors", anchor, admin);
    if (pinned.status !== 200) throw new UsageError(`anchors file: ${JSON.stringify(pinned.body.error ?? pinned.body)}`);
  }
  for (const m of o.trust.manifests) {
    const pinned = await send("PUT", "/v1/admin/manifests", m, admin);
    if (pinned.status !== 200) throw new UsageError(`anchors file, manifests: ${JSON.stringify(pinned.body.error ?? pinned.body)}`);
  }
  for (const r of o.trust.revoked) {
    const revoked = await send("POST", "/v1/admin/anchors/revoke", r, admin);
    if (revoked.status !== 200) throw new UsageError(`anchors file, revoked: ${JSON.stringify(revoked.body.error ?? revoked.body)}`);
  }
  // A party holds at most MAX_AUDIENCES_PER_PARTY audiences; a `--lines` file may speak for more
  // (an export across relying parties), so they are registered to as many parties as it takes,
  // and each call is sent as the party of its audience. One party was refused outright past 16.
  const tokens = new Map<string, string>();
  for (let i = 0; i < audiences.length; i += MAX_AUDIENCES_PER_PARTY) {
    const group = audiences.slice(i, i + MAX_AUDIENCES_PER_PARTY);
    const token = i === 0 ? party : randomToken();
    const registered = await send("POST", "/v1/admin/relying-parties", { name: i === 0 ? "offline" : `offline-${i / MAX_AUDIENCES_PER_PARTY}`, audiences: group, token }, admin);
    if (registered.status !== 201) throw new UsageError(`audience: ${JSON.stringify(registered.body.error ?? registered.body)}`);
    for (const a of group) tokens.set(a, token);
  }
  return { post: (path, body, audience) => send("POST", path, body, (audience !== undefined ? tokens.get(audience) : undefined) ?? party) };
}

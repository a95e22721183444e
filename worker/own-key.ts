/**
 * This deployment's own signing key, as the issuing routes see it: whether it has been revoked,
 * and the refusal every route that would sign under it answers.
 */
import type { Context } from "hono";
import type { AppEnv } from "./app.js";
import type { Issuing } from "./config.js";
import { ApiError } from "./http.js";
import { cacheWrites, countCacheWrite } from "./stores.js";

/**
 * Whether this deployment's own signing key has been revoked (`POST /v1/admin/anchors/revoke` of
 * its issuer and kid), read from the global `revoked-key:<fingerprint>` record the revocation
 * writes: one KV read, not a Durable Object round trip on every issuance. Every issuing route asks
 * before it signs, so once the record is visible (at once where it was written, within KV's
 * propagation elsewhere) nothing is issued that would only fail ANCHOR_REVOKED; a receipt signed
 * in that interval is still refused at verification, where the ledger is authoritative.
 */
export async function ownKeyRevoked(c: Context<AppEnv>, { identity }: Pick<Issuing, "identity">): Promise<boolean> {
  const known = ownKeyChecks.get(identity.fingerprint);
  if (known && (known.revoked || Date.now() - known.at < OWN_KEY_CHECK_TTL_MS)) return known.revoked;
  const writes = cacheWrites(ownKeyChecks);
  const revoked = (await c.get("services").anchors.revokedKey(identity.fingerprint)) !== null;
  // A revocation this isolate served while the read was in flight cleared the check: what was read
  // before it answers this call but is not kept over it (the unrevoked answer was
  // kept for 10 s more on the isolate that served the revocation, as the other caches were).
  if (revoked || cacheWrites(ownKeyChecks) === writes) ownKeyChecks.set(identity.fingerprint, { at: Date.now(), revoked });
  return revoked;
}

/**
 * How long an isolate trusts its last "not revoked" answer for its own key: one KV read per
 * OWN_KEY_CHECK_TTL_MS instead of one per issuance (a revoked answer is kept for good). A
 * revocation in this isolate clears it at once (`forgetOwnKeyCheck`, counted so a check in flight
 * across it is not kept over it); elsewhere it adds at most
 * this much to KV's propagation.
 */
export const OWN_KEY_CHECK_TTL_MS = 10_000;
/** By key fingerprint: a deployment signs with one key at a time, so this holds one or two entries. */
const ownKeyChecks = new Map<string, { at: number; revoked: boolean }>();
export const forgetOwnKeyCheck = (fingerprint: string): void => {
  countCacheWrite(ownKeyChecks);
  ownKeyChecks.delete(fingerprint);
};

/** The answer of an issuing call (not /v1/intake, which keeps its own error vocabulary) once the own key is revoked. */
export const signingKeyRevoked = () =>
  new ApiError(503, "SIGNING_KEY_REVOKED", "this deployment's signing key has been revoked: nothing is signed under it until the deployment is configured with a new key and that key is pinned");

/** Refuses (503 SIGNING_KEY_REVOKED) before anything is signed under a revoked own key. */
export async function refuseIfOwnKeyRevoked(c: Context<AppEnv>, own: Pick<Issuing, "identity">): Promise<void> {
  if (await ownKeyRevoked(c, own)) throw signingKeyRevoked();
}

import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { ApiError, percentDecodes } from "../http.js";
import { DEFAULT_SEQUENCE_POLICY } from "../protocol/ledger.js";
import { issuerProblem } from "../protocol/anchors.js";
import { DEFAULT_VERIFIER_CLASS } from "../protocol/conformance/verifier-class.js";
import { dependencyTimeout } from "../config.js";
import { readReview } from "../stores.js";

/**
 * The issuer a path names: 400 when it does not decode or cannot be an issuer, before any read.
 * Decoded once: the router has already decoded the parameter, so decoding it again would read an
 * issuer's own `%41` as `A` (another issuer) and refuse one holding `%`. Whether the path was valid
 * percent-encoded UTF-8 is judged on the request's own path, which the router's decoding hides.
 */
function issuerOf(c: Context<AppEnv>): string {
  if (!percentDecodes(c)) throw new ApiError(400, "MALFORMED_REQUEST", "the issuer in the path is not valid percent-encoded UTF-8");
  const issuer = c.req.param("issuer") ?? "";
  const problem = issuerProblem(issuer);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  return issuer;
}

export const issuerRoutes = new Hono<AppEnv>()
  /**
   * The pinned public anchor of one issuer: current and previous keys, each marked revoked or
   * not (by fingerprint, from the issuer's ledger), the revocations and the audited sequence resets;
   * its verifier class and, from the decision counters, whether it is flagged for review (13.7).
   */
  .get("/:issuer{.+}", async (c) => {
  const issuer = issuerOf(c);
  const { anchors, ledgers, reviewThreshold } = c.get("services");
  const record = await anchors.get(issuer);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} is not pinned`);
  const shards = record.ledger_shards ?? 1;
  const [{ revoked, sequence_resets }, review] = await Promise.all([
    ledgers.anchorState(issuer, shards),
    // Operational counters, not evidence: when they do not answer, the flag is unknown (null).
    readReview(c.env, issuer, reviewThreshold, dependencyTimeout(c.env)).catch(() => null),
  ]);
  const revokedKeys = new Set(revoked.map((r) => r.fingerprint));
  return c.json({
    issuer: record.issuer,
    org_id: record.org_id,
    pinned_at: record.pinned_at,
    ledger_shards: shards,
    sequence_policy: record.sequence_policy ?? DEFAULT_SEQUENCE_POLICY,
    chain_sealer: record.chain_sealer === true,
    keys: record.keys.map((k) => ({ ...k, short_fingerprint: k.fingerprint.slice(0, 16), revoked: revokedKeys.has(k.fingerprint) })),
    previous_keys: (record.previous_keys ?? []).map((k) => ({ ...k, revoked: revokedKeys.has(k.fingerprint) })),
    revoked,
    sequence_resets,
    verifier_class: record.verifier_class ?? DEFAULT_VERIFIER_CLASS,
    audit: record.audit ?? null,
    // The secret's name is configuration; the secret never leaves the Worker.
    level0: record.shared_secret !== undefined,
    review,
  });
});

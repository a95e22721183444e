import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { ApiError } from "../http.js";

export const issuerRoutes = new Hono<AppEnv>();

/** The pinned public anchor of one issuer, with the revoked kids from its ledger. */
issuerRoutes.get("/:issuer{.+}", async (c) => {
  const issuer = decodeURIComponent(c.req.param("issuer"));
  const { anchors, ledgers } = c.get("services");
  const record = await anchors.get(issuer);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} is not pinned`);
  const shards = record.ledger_shards ?? 1;
  const revoked = await ledgers.revocations(issuer, shards);
  const revokedKids = new Set(revoked.map((r) => r.kid));
  return c.json({
    issuer: record.issuer,
    org_id: record.org_id,
    pinned_at: record.pinned_at,
    ledger_shards: shards,
    keys: record.keys.map((k) => ({ ...k, short_fingerprint: k.fingerprint.slice(0, 16), revoked: revokedKids.has(k.kid) })),
    revoked,
  });
});

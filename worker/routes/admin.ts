import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { MAX_ADMIN_BODY } from "../config.js";
import { ApiError, bearerMatches, readStrictJson, requireObject } from "../http.js";
import { buildAnchorRecord } from "../protocol/anchors.js";

export const adminRoutes = new Hono<AppEnv>();

adminRoutes.use(async (c, next) => {
  if (!(await bearerMatches(c.req.header("authorization"), c.env.ADMIN_TOKEN))) {
    throw new ApiError(401, "UNAUTHORIZED", "a valid admin bearer token is required");
  }
  await next();
});

/** Pins or replaces an issuer's anchor. A kid revoked before can never be pinned again. */
adminRoutes.put("/anchors", async (c) => {
  const { now, anchors, ledgers } = c.get("services");
  const built = await buildAnchorRecord(await readStrictJson(c, MAX_ADMIN_BODY), Math.floor(now()));
  if (built.kind === "invalid") throw new ApiError(400, built.code, built.errors.join("; "));
  const { record } = built;
  const shards = record.ledger_shards ?? 1;
  const existing = await anchors.get(record.issuer);
  if (existing && (existing.ledger_shards ?? 1) !== shards) {
    throw new ApiError(409, "ANCHOR_SHARDS_IMMUTABLE", `ledger_shards is ${existing.ledger_shards ?? 1} for this issuer and cannot change: moving nonces between shards would open a replay window`);
  }
  const revoked = new Set((await ledgers.revocations(record.issuer, shards)).map((r) => r.kid));
  const reused = record.keys.filter((k) => revoked.has(k.kid)).map((k) => k.kid);
  if (reused.length > 0) throw new ApiError(409, "ANCHOR_KID_REVOKED", `kid ${reused.join(", ")} was revoked and cannot be pinned again`);
  await anchors.put(record);
  return c.json({ issuer: record.issuer, keys: record.keys.map((k) => ({ kid: k.kid, fingerprint: k.fingerprint })) });
});

/** Revokes one key in every ledger shard of the issuer: the very next verification anywhere sees it. */
adminRoutes.post("/anchors/revoke", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_ADMIN_BODY), "body");
  const { issuer, kid } = body;
  if (typeof issuer !== "string" || typeof kid !== "string" || Object.keys(body).length !== 2) {
    throw new ApiError(400, "MALFORMED_REQUEST", "body must be {issuer, kid}");
  }
  const { now, anchors, ledgers } = c.get("services");
  const record = await anchors.get(issuer);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} is not pinned`);
  if (!record.keys.some((k) => k.kid === kid)) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} has no key ${kid}`);
  const revoked = await ledgers.revoke(issuer, record.ledger_shards ?? 1, kid, Math.floor(now()));
  return c.json({ issuer, ...revoked });
});

import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { requireAdmin } from "../auth.js";
import { audiences, MAX_ADMIN_BODY as MAX_BODY } from "../config.js";
import { ApiError, readStrictJson, requireObject } from "../http.js";
import { buildAnchorRecord } from "../protocol/anchors.js";
import { sha256Hex } from "../protocol/digest.js";
import { newToken, parseRegistration, RELYING_PARTY_NAME } from "../protocol/relying-parties.js";

export const adminRoutes = new Hono<AppEnv>();

adminRoutes.use(requireAdmin);

/** Registers a relying party; the token is answered once and stored only as its SHA-256. */
adminRoutes.post("/relying-parties", async (c) => {
  const parsed = parseRegistration(await readStrictJson(c, MAX_BODY), audiences(c.env));
  if (!parsed.ok) throw new ApiError(400, "MALFORMED_REQUEST", parsed.detail);
  const { name, audiences: allowed, token: supplied } = parsed.registration;
  const { now, relyingParties } = c.get("services");
  const token = supplied ?? newToken(crypto.getRandomValues(new Uint8Array(32)));
  const created = await relyingParties.create({ name, audiences: allowed, token_sha256: await sha256Hex(token), created_at: Math.floor(now()) });
  if (!created) throw new ApiError(409, "RELYING_PARTY_EXISTS", `relying party ${name} exists; delete it first to issue a new token`);
  return c.json({ name, token, audiences: allowed }, 201);
});

adminRoutes.get("/relying-parties", async (c) => {
  const parties = await c.get("services").relyingParties.list();
  return c.json({ relying_parties: parties.map(({ name, audiences, created_at }) => ({ name, audiences, created_at })) });
});

/** Revokes a relying party's token: its next call is 401. */
adminRoutes.delete("/relying-parties/:name", async (c) => {
  const name = c.req.param("name");
  if (!RELYING_PARTY_NAME.test(name)) throw new ApiError(400, "MALFORMED_REQUEST", "name must be 1-64 of [A-Za-z0-9._-]");
  if (!(await c.get("services").relyingParties.delete(name))) throw new ApiError(404, "NOT_FOUND", `no relying party ${name}`);
  return c.json({ name, deleted: true });
});

/** Pins or replaces an issuer's anchor. A kid revoked before can never be pinned again. */
adminRoutes.put("/anchors", async (c) => {
  const { now, anchors, ledgers } = c.get("services");
  const built = await buildAnchorRecord(await readStrictJson(c, MAX_BODY), Math.floor(now()));
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
  const body = requireObject(await readStrictJson(c, MAX_BODY), "body");
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

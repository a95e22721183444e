import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { issuing, signingIdentity } from "../config.js";
import { sha256Hex } from "../protocol/digest.js";
import { issuerDocument } from "../protocol/issuing/identity.js";
import { refuseIfOwnKeyRevoked } from "../own-key.js";

/** How long a client may reuse the manifest before revalidating with If-None-Match. */
export const MANIFEST_MAX_AGE = 300;

/** Whether an If-None-Match header names `etag` (weak comparison, as RFC 9110 asks of If-None-Match), or is `*`. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

export const wellKnownRoutes = new Hono<AppEnv>()
  /** This verifier's issuer and public keys, in exactly the form `PUT /v1/admin/anchors` accepts. */
  .get("/ccs-issuer", (c) => {
  // Read first: a configuration refused here (500 SERVICE_MISCONFIGURED) is not made cacheable for five minutes.
  const document = issuerDocument(signingIdentity(c.env));
  c.header("cache-control", "public, max-age=300");
  return c.json(document);
})
  /**
   * This verifier's signed capability manifest (CCS §4.6), as its canonical (RFC 8785) text. The
   * strong ETag is the SHA-256 of those bytes: the same for every isolate within one validity
   * window (the signature is deterministic), so a poller's If-None-Match is answered 304 without a body.
   */
  .get("/ccs-manifest", async (c) => {
  const own = await issuing(c.env);
  // A manifest signed under a revoked key vouches for nothing: nothing is signed with it.
  await refuseIfOwnKeyRevoked(c, own);
  const { manifest } = own;
  const { text } = await manifest.signed(c.get("services").now());
  const etag = `"${await sha256Hex(text)}"`;
  c.header("ETag", etag);
  c.header("Cache-Control", `public, max-age=${MANIFEST_MAX_AGE}`);
  if (noneMatch(c.req.header("if-none-match"), etag)) return c.body(null, 304);
  c.header("Content-Type", "application/json");
  return c.body(text);
});

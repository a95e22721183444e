import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { signingIdentity } from "../config.js";
import { issuerDocument } from "../protocol/issuing/identity.js";

export const wellKnownRoutes = new Hono<AppEnv>();

/** This verifier's issuer and public keys, in exactly the form `PUT /v1/admin/anchors` accepts. */
wellKnownRoutes.get("/ccs-issuer", (c) => {
  c.header("cache-control", "public, max-age=300");
  return c.json(issuerDocument(signingIdentity(c.env)));
});

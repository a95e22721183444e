import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { issuing } from "../config.js";
import { ApiError } from "../http.js";
import { SHA256_REF } from "../protocol/encoding.js";

export const configRoutes = new Hono<AppEnv>()
  /**
   * This deployment's canonical configuration, the config_hash its receipts carry, and the content
   * of the manifest its manifest_hash names. Public: it holds no secret.
   */
  .get("/", async (c) => {
  const { context, manifest } = await issuing(c.env);
  return c.json({ config: context.config, config_hash: context.configHash, manifest: manifest.content });
})
  /** Any configuration this deployment has issued under (its history), or the current one. */
  .get("/:hash", async (c) => {
  const hash = c.req.param("hash");
  if (!SHA256_REF.test(hash)) throw new ApiError(400, "MALFORMED_REQUEST", 'a config_hash is "sha256:" + 64 lowercase hex');
  const record = await c.get("services").manifests.configuration(hash);
  if (!record) throw new ApiError(404, "NOT_FOUND", "no configuration with that hash was issued under here");
  return c.json({ config: record.config, config_hash: record.config_hash, manifest: record.manifest });
});

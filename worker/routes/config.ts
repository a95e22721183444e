import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { issuing } from "../config.js";
import { ApiError } from "../http.js";

export const configRoutes = new Hono<AppEnv>();

/** This deployment's canonical configuration and the config_hash its receipts carry. Public: it holds no secret. */
configRoutes.get("/", async (c) => {
  const { context } = await issuing(c.env);
  return c.json({ config: context.config, config_hash: context.configHash });
});

/** The configuration a config_hash names, when it is the current one. */
configRoutes.get("/:hash", async (c) => {
  const { context } = await issuing(c.env);
  if (c.req.param("hash") !== context.configHash) throw new ApiError(404, "NOT_FOUND", "no configuration with that hash is held here");
  return c.json({ config: context.config, config_hash: context.configHash });
});

/**
 * The public identity routes are cacheable when they answer, never when they refuse: a 500
 * SERVICE_MISCONFIGURED from /.well-known/ccs-issuer carried its 200's `public, max-age=300`,
 * so a cache in front kept the refusal five minutes after the configuration was fixed.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { nodeEnv } from "../../cli/offline-env.js";

/** The public demo seed of .dev.vars.example. */
const SEED = "fb477c555263404d1ed11ab838d941774da0329b7907d835537dc0740400237f";
const base = { ORG_ID: "https://relying-org.example", ISSUER: "https://countersign.example" };

async function get(vars: Record<string, string>, path: string) {
  const { env, ledgerStub, ctx } = nodeEnv(vars);
  const res = await createApp({ ledgerStub }).request(path, {}, env, ctx);
  return { status: res.status, cache: res.headers.get("cache-control"), body: (await res.json()) as any };
}

describe("cacheable answers of the well-known routes", () => {
  it("a refusal carries no Cache-Control; the answer it replaces does", async () => {
    for (const path of ["/.well-known/ccs-issuer", "/.well-known/ccs-manifest"]) {
      const refused = await get(base, path);
      expect([refused.status, refused.body.error?.code, refused.cache], path).toEqual([500, "SERVICE_MISCONFIGURED", null]);
      const served = await get({ ...base, SIGNING_KEY: SEED, SIGNING_KID: "cache-test-1", LEGACY_HMAC_KEY: "01".repeat(32) }, path);
      expect([served.status, served.cache], path).toEqual([200, "public, max-age=300"]);
    }
  });
});

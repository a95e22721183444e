import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { ApiError, readStrictJson, requireObject } from "../http.js";
import { SHA256_REF } from "../protocol/encoding.js";
import { replayBundle } from "../protocol/ec/bundle.js";
import { corpusProblem, type Corpus } from "../protocol/ec/corpus.js";
import { verifyEcReceipt } from "../protocol/ec/receipt.js";
import { DEFAULT_SUPPORT_CONFIG, evaluateSupport, type SupportConfig } from "../protocol/ec/support.js";

/** EC-Agent bodies carry whole source documents and traces: larger than a receipt call. */
export const MAX_EC_BODY = 2 * 1024 * 1024;
const MAX_PAIRS = 256;

export const ecRoutes = new Hono<AppEnv>();

function exactly(body: Record<string, unknown>, required: string[], optional: string[] = []) {
  for (const key of Object.keys(body)) if (!required.includes(key) && !optional.includes(key)) throw new ApiError(400, "MALFORMED_REQUEST", `unknown field ${JSON.stringify(key)}`);
  for (const key of required) if (!Object.hasOwn(body, key)) throw new ApiError(400, "MALFORMED_REQUEST", `${key} is required`);
}

/** The verifier API: a receipt, the corpus map and the ordered events → {valid, reasons, …}. */
ecRoutes.post("/ec/receipts/verify", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_EC_BODY), "body");
  exactly(body, ["receipt", "corpus", "events"]);
  const problem = await corpusProblem(body.corpus);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  return c.json(await verifyEcReceipt(body.receipt, body.corpus as Corpus, body.events));
});

/**
 * Bundle replay: always 200 with the report; its `decision` says match, mismatch or
 * manifest_invalid, and every manifest problem carries its code. `expected_bundle_digest` pins
 * the outer digest the caller trusts.
 */
ecRoutes.post("/bundles/replay", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_EC_BODY), "body");
  exactly(body, ["bundle"], ["expected_bundle_digest"]);
  const expected = body.expected_bundle_digest;
  if (expected !== undefined && (typeof expected !== "string" || !SHA256_REF.test(expected))) throw new ApiError(400, "MALFORMED_REQUEST", 'expected_bundle_digest must be "sha256:" + 64 lowercase hex');
  return c.json(await replayBundle(body.bundle, { expectedBundleDigest: expected ?? null }));
});

function supportConfig(value: unknown): SupportConfig {
  if (value === undefined) return DEFAULT_SUPPORT_CONFIG;
  const v = requireObject(value, "config");
  exactly(v, [], ["threshold", "pairs"]);
  const threshold = v.threshold ?? DEFAULT_SUPPORT_CONFIG.threshold;
  if (typeof threshold !== "number" || !(threshold > 0 && threshold <= 1)) throw new ApiError(400, "MALFORMED_REQUEST", "config.threshold must be a number in (0, 1]");
  const pairs = v.pairs ?? DEFAULT_SUPPORT_CONFIG.pairs;
  if (!Array.isArray(pairs) || pairs.length > MAX_PAIRS || !pairs.every((p) => Array.isArray(p) && p.length === 2 && p.every((w) => typeof w === "string" && w !== ""))) {
    throw new ApiError(400, "MALFORMED_REQUEST", `config.pairs must be at most ${MAX_PAIRS} pairs of non-empty words`);
  }
  return { ...DEFAULT_SUPPORT_CONFIG, threshold, pairs: pairs as [string, string][] };
}

/** Both support predicates, with every intermediate field and the configuration digest. */
ecRoutes.post("/support/evaluate", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_EC_BODY), "body");
  exactly(body, ["claim", "spans"], ["config"]);
  if (typeof body.claim !== "string") throw new ApiError(400, "MALFORMED_REQUEST", "claim must be a string");
  if (!Array.isArray(body.spans) || body.spans.length === 0 || !body.spans.every((s) => typeof s === "string")) throw new ApiError(400, "MALFORMED_REQUEST", "spans must be a non-empty array of strings");
  return c.json(await evaluateSupport(body.claim, body.spans as string[], supportConfig(body.config)));
});

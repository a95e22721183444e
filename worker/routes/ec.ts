import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { BundleCall, EcVerifyCall, SupportCall } from "../contract/schemas.js";
import { ApiError, clipFailureDetails, jsonBody, readStrictJson, validateBody } from "../http.js";
import { replayBundle } from "../protocol/ec/bundle.js";
import { corpusProblem, type Corpus } from "../protocol/ec/corpus.js";
import { answerWithin, EC_LIMITS, EcLimitError } from "../protocol/ec/limits.js";
import { verifyEcReceipt, VerifyMemo } from "../protocol/ec/receipt.js";
import { DEFAULT_SUPPORT_CONFIG, evaluateSupport, pairMember } from "../protocol/ec/support.js";
import { isJsonObject } from "../protocol/strict-json.js";

/** EC-Agent bodies carry whole source documents and traces: larger than a receipt call. */
export const MAX_EC_BODY = 2 * 1024 * 1024;

/**
 * A call over one of the EC_LIMITS caps is refused whole, before or while its work is done, or
 * once its answer is known to be too large to send: 400 EC_LIMIT_EXCEEDED.
 */
async function capped<T>(work: () => Promise<T>): Promise<T> {
  try {
    const answer = await work();
    answerWithin(answer, EC_LIMITS);
    return answer;
  } catch (err) {
    if (err instanceof EcLimitError) throw new ApiError(400, "EC_LIMIT_EXCEEDED", `${err.limit}: ${err.message}`);
    throw err;
  }
}

export const ecRoutes = new Hono<AppEnv>()
  /** The verifier API: a receipt, the corpus map and the ordered events → {valid, reasons, …}; each finding's detail cut at MAX_DETAIL_CHARS, as an error's. */
  .post("/ec/receipts/verify", jsonBody(EcVerifyCall), async (c) => {
    const body = validateBody(EcVerifyCall, await readStrictJson(c, MAX_EC_BODY));
    for (const key of ["receipt", "corpus", "events"] as const) if (!Object.hasOwn(body, key)) throw new ApiError(400, "MALFORMED_REQUEST", `${key} is required`);
    const answer = await capped(async () => {
      const problem = await corpusProblem(body.corpus, EC_LIMITS);
      if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
      const corpus = body.corpus as Corpus;
      return verifyEcReceipt(body.receipt, corpus, body.events, { memo: new VerifyMemo(corpus, EC_LIMITS) });
    });
    // A finding's detail can quote the call (an unknown field's name, a span id): cut as an error's is.
    return c.json({ ...answer, findings: clipFailureDetails(answer.findings) });
  })
  /**
   * Bundle replay: always 200 with the report; its `decision` says match, mismatch or
   * manifest_invalid, and every manifest problem carries its code (its detail cut at
   * MAX_DETAIL_CHARS, as an error's). `expected_bundle_digest` pins
   * the outer digest the caller trusts.
   */
  .post("/bundles/replay", jsonBody(BundleCall), async (c) => {
    const body = validateBody(BundleCall, await readStrictJson(c, MAX_EC_BODY));
    if (!Object.hasOwn(body, "bundle")) throw new ApiError(400, "MALFORMED_REQUEST", "bundle is required");
    const report = await capped(() => replayBundle(body.bundle, { expectedBundleDigest: body.expected_bundle_digest ?? null, limits: EC_LIMITS }));
    // A problem's detail can quote the bundle (an unknown field's name): cut as an error's is.
    return c.json({ ...report, manifest_problems: clipFailureDetails(report.manifest_problems) });
  })
  /** Both support predicates, with every intermediate field and the configuration digest. */
  .post("/support/evaluate", jsonBody(SupportCall), async (c) => {
    const raw = await readStrictJson(c, MAX_EC_BODY);
    // The span cap is judged before the schema: the schema reads every element and notes one
    // problem per ill-typed one, and 200,000 of them (`[0,0,…]`, 400 KB) overflowed the stack
    // as the problems were gathered (a 500); the cap is the same one evaluateSupport applies.
    if (isJsonObject(raw) && Array.isArray(raw.spans) && raw.spans.length > EC_LIMITS.support_spans) {
      throw new ApiError(400, "EC_LIMIT_EXCEEDED", `support_spans: ${raw.spans.length} spans; at most ${EC_LIMITS.support_spans} are judged in one call`);
    }
    const body = validateBody(SupportCall, raw);
    // A pair member is matched case-folded against the text's tokens; one that is no single token
    // would never match, and a pair of it would silently never conflict: refused, not ignored.
    const pairs = body.config?.pairs?.map((pair, i) =>
      pair.map((member) => {
        const folded = pairMember(member);
        if (folded === null) throw new ApiError(400, "MALFORMED_REQUEST", `config.pairs[${i}]: ${JSON.stringify(member)} is not one word (word characters, at least two): it could never be found in a claim or span`);
        return folded;
      }) as [string, string],
    );
    const config = { ...DEFAULT_SUPPORT_CONFIG, ...body.config, ...(pairs ? { pairs } : {}) };
    return c.json(await capped(() => evaluateSupport(body.claim, body.spans, config, EC_LIMITS)));
  });

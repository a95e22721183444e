import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { VerifyCall } from "../contract/schemas.js";
import { ApiError, jsonBody, readStrictJson, validateBody } from "../http.js";
import { dependency, gateDecision, rejection, verifyReceipt } from "../protocol/verify.js";
import { decodeSharedSecret, isLevel0Shape, level0Refused, verifyLevel0, type Level0Decision } from "../protocol/conformance/level0.js";
import { issuerProblem } from "../protocol/anchors.js";
import type { z } from "zod";
import { answerDecision, parseDecisionCall, verifierClasses, verifyDeps, type DecisionCall } from "./decision-call.js";

export const receiptRoutes = new Hono<AppEnv>()
  .post("/verify", jsonBody(VerifyCall), async (c) => {
  const body = validateBody(VerifyCall, await readStrictJson(c, MAX_VERIFY_BODY, { field: "receipt", code: "MALFORMED_RECEIPT" }));
  const call = parseDecisionCall(c, body, "receipt");
  if (call.mode === "enforce" && body.request === undefined) throw new ApiError(400, "MALFORMED_REQUEST", "enforce mode requires request");
  const classes = verifierClasses(c, call.audience, verifyDeps(c.get("services")));
  if (body.level === 0) return answerDecision(c, classes.report(await level0(c, body, call, classes)));
  if (body.issuer !== undefined) throw new ApiError(400, "MALFORMED_REQUEST", "issuer is given only with level: 0 (a v1.3 receipt names its own)");
  // A Level 0 receipt presented as v1.3 evidence is refused by name, not as a malformed receipt.
  if (isLevel0Shape(body.receipt)) return answerDecision(c, { ...rejection([level0Refused("a call without level: 0")], call.mode, call.now), verifier_class: null, level: 0 as const });
  return answerDecision(c, { ...classes.report(await atLevel1(c, body, call, classes)), level: 1 as const });
});

/** The receipt judged as a v1.3 receipt: signature, ledger, binding, the class floor. */
function atLevel1(c: Context<AppEnv>, body: z.output<typeof VerifyCall>, call: DecisionCall, classes: ReturnType<typeof verifierClasses>) {
  return verifyReceipt(
    body.receipt,
    {
      ...call,
      policy: freshnessPolicy(c.env),
      request: body.request,
      response: body.response,
      runtimeContext: body.runtime_context,
      reportedOutcome: body.outcome_status,
      contextChecks: (r) => classes.check(r.issuer),
    },
    classes.deps,
  );
}

/**
 * A `level: 0` call: the receipt judged by its HMAC under the shared secret its issuer is pinned
 * with (the anchor names a Worker secret; the secret is read from the environment here and never
 * stored). A pinned reference to a secret this deployment lacks is a configuration error.
 */
async function level0(c: Context<AppEnv>, body: z.output<typeof VerifyCall>, call: DecisionCall, classes: ReturnType<typeof verifierClasses>): Promise<Level0Decision> {
  const named = body.issuer ?? (isLevel0Shape(body.receipt) ? undefined : (body.receipt as { issuer?: unknown } | null)?.issuer);
  if (typeof named !== "string") throw new ApiError(400, "MALFORMED_REQUEST", "a level: 0 call names the issuer whose shared secret verifies the receipt");
  if (body.response !== undefined || body.outcome_status !== undefined) throw new ApiError(400, "MALFORMED_REQUEST", "a level: 0 call takes receipt, audience, issuer, request and mode only");
  // Nothing can be pinned under a name longer than an issuer may be (issuerProblem): such a name is
  // judged unpinned without a read, which KV would fail (its key limit) and answer 503, inviting a
  // retry of a receipt that is malformed (MALFORMED_RECEIPT, as for a shorter overlong issuer).
  const pinned = issuerProblem(named) === null ? await dependency("anchor store", () => classes.deps.anchors(named)) : null;
  classes.saw(named, pinned);
  let secret: Uint8Array | null = null;
  if (pinned?.sharedSecret) {
    secret = decodeSharedSecret((c.env as unknown as Record<string, string | undefined>)[pinned.sharedSecret]);
    if (!secret) throw new ApiError(500, "SERVICE_MISCONFIGURED", "the shared secret this issuer is pinned with is not configured in this deployment (at least 32 bytes as lowercase hex)");
  }
  const judged = await verifyLevel0(body.receipt, {
    issuer: named,
    secret,
    crossOrg: pinned !== null && pinned.orgId !== null && pinned.orgId !== (c.env.ORG_ID || null),
    audience: call.audience,
    mode: call.mode,
    now: call.now,
    policy: freshnessPolicy(c.env),
    request: body.request,
    runtimeContext: body.runtime_context,
  });
  const floor = classes.check(named);
  if (floor.length > 0) return { ...judged, valid: false, decision: gateDecision(call.mode, false, "block"), failures: [...floor, ...judged.failures], enforcement: { ...judged.enforcement, action: "block" } };
  if (!judged.valid || isLevel0Shape(body.receipt)) return judged;
  // A v1.3 receipt whose field 7 holds: the HMAC proves only who made it, and this deployment holds
  // what else the receipt answers to (its Ed25519 signature, its key's revocation, its nonce). A
  // receipt those refuse is refused here too, so `level: 0` never accepts what level 1 would not;
  // the nonce is consumed as at level 1, so the replay warning no longer applies.
  return { ...(await atLevel1(c, body, call, classes)), level: 0 as const };
}

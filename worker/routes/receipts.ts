import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { VerifyCall } from "../contract/schemas.js";
import { ApiError, jsonBody, readStrictJson, validateBody } from "../http.js";
import { verifyReceipt } from "../protocol/verify.js";
import { answerDecision, parseDecisionCall, verifyDeps } from "./decision-call.js";

export const receiptRoutes = new Hono<AppEnv>()
  .post("/verify", jsonBody(VerifyCall), async (c) => {
  const body = validateBody(VerifyCall, await readStrictJson(c, MAX_VERIFY_BODY, { field: "receipt", code: "MALFORMED_RECEIPT" }));
  const call = parseDecisionCall(c, body, "receipt");
  if (call.mode === "enforce" && body.request === undefined) throw new ApiError(400, "MALFORMED_REQUEST", "enforce mode requires request");
  const decision = await verifyReceipt(
    body.receipt,
    {
      ...call,
      policy: freshnessPolicy(c.env),
      request: body.request,
      response: body.response,
      runtimeContext: body.runtime_context,
      reportedOutcome: body.outcome_status,
    },
    verifyDeps(c.get("services")),
  );
  return answerDecision(c, decision);
});

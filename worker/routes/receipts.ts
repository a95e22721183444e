import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { ApiError, readStrictJson, requireObject } from "../http.js";
import { requestProblem, type PresentedRequest } from "../protocol/checks/binding.js";
import type { ReportedOutcome } from "../protocol/checks/outcome.js";
import { verifyReceipt } from "../protocol/verify.js";
import { answerDecision, parseDecisionCall, verifyDeps } from "./decision-call.js";

const VERIFY_FIELDS = new Set(["receipt", "audience", "request", "response", "runtime_context", "mode", "at", "outcome_status"]);

export const receiptRoutes = new Hono<AppEnv>();

receiptRoutes.post("/verify", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_VERIFY_BODY, { field: "receipt", code: "MALFORMED_RECEIPT" }), "body");
  const call = parseDecisionCall(c, body, VERIFY_FIELDS, "receipt");
  if (call.mode === "enforce" && body.request === undefined) throw new ApiError(400, "MALFORMED_REQUEST", "enforce mode requires request");
  if (body.request !== undefined) {
    const problem = requestProblem(body.request);
    if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  }
  const reported = body.outcome_status as ReportedOutcome | undefined;
  if (reported !== undefined && reported !== "indeterminate" && reported !== "unknown") {
    throw new ApiError(400, "MALFORMED_REQUEST", 'outcome_status, when reported, must be "indeterminate" or "unknown"');
  }
  const decision = await verifyReceipt(
    body.receipt,
    {
      ...call,
      policy: freshnessPolicy(c.env),
      request: body.request as PresentedRequest | undefined,
      response: body.response,
      runtimeContext: body.runtime_context,
      reportedOutcome: reported,
    },
    verifyDeps(c.get("services")),
  );
  return answerDecision(c, decision);
});

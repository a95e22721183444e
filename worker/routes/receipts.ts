import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { audiences, freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { ApiError, readStrictJson, requireObject } from "../http.js";
import { requestProblem, type PresentedRequest } from "../protocol/checks/binding.js";
import type { ReportedOutcome } from "../protocol/checks/outcome.js";
import type { Receipt } from "../protocol/receipt.js";
import { verifyReceipt, type Mode } from "../protocol/verify.js";

const VERIFY_FIELDS = new Set(["receipt", "audience", "request", "response", "runtime_context", "mode", "at", "outcome_status"]);
const STATEFUL_CODES = new Set(["REPLAY_DETECTED", "ANCHOR_REVOKED"]);

export const receiptRoutes = new Hono<AppEnv>();

receiptRoutes.post("/verify", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_VERIFY_BODY, "receipt"), "body");
  for (const key of Object.keys(body)) if (!VERIFY_FIELDS.has(key)) throw new ApiError(400, "MALFORMED_REQUEST", `unknown field ${JSON.stringify(key)}`);
  if (!Object.hasOwn(body, "receipt")) throw new ApiError(400, "MALFORMED_REQUEST", "receipt is required");
  const served = audiences(c.env);
  if (typeof body.audience !== "string" || !served.has(body.audience)) {
    throw new ApiError(400, "MALFORMED_REQUEST", `audience must be one this deployment serves: ${[...served].join(", ")}`);
  }
  const mode = (body.mode ?? "enforce") as Mode;
  if (mode !== "enforce" && mode !== "audit") throw new ApiError(400, "MALFORMED_REQUEST", 'mode must be "enforce" or "audit"');
  if (body.at !== undefined) {
    if (mode !== "audit") throw new ApiError(400, "MALFORMED_REQUEST", "at is only accepted in audit mode");
    if (typeof body.at !== "number") throw new ApiError(400, "MALFORMED_REQUEST", "at must be a number of Unix seconds");
  }
  if (mode === "enforce" && body.request === undefined) throw new ApiError(400, "MALFORMED_REQUEST", "enforce mode requires request");
  if (body.request !== undefined) {
    const problem = requestProblem(body.request);
    if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  }
  const reported = body.outcome_status as ReportedOutcome | undefined;
  if (reported !== undefined && reported !== "indeterminate" && reported !== "unknown") {
    throw new ApiError(400, "MALFORMED_REQUEST", 'outcome_status, when reported, must be "indeterminate" or "unknown"');
  }

  const { now, verifier, anchors, ledgers } = c.get("services");
  const decision = await verifyReceipt(
    body.receipt,
    {
      audience: body.audience,
      mode,
      now: (body.at as number | undefined) ?? now(),
      policy: freshnessPolicy(c.env),
      request: body.request as PresentedRequest | undefined,
      response: body.response,
      runtimeContext: body.runtime_context,
      reportedOutcome: reported,
    },
    { anchors: (issuer) => anchors.pinned(issuer), verifier, ledger: (issuer, nonce, shards) => ledgers.forDecision(issuer, nonce, shards) },
  );
  const malformed = decision.failures.some((f) => f.code === "MALFORMED_RECEIPT");
  const reachedLedger = decision.nonce_consumed || decision.failures.some((f) => STATEFUL_CODES.has(f.code));
  if (mode === "enforce" && decision.issuer && !reachedLedger) {
    const { issuer } = decision;
    const { nonce } = body.receipt as Receipt;
    const codes = decision.failures.map((f) => f.code);
    // Only pinned issuers have ledgers: a forged issuer name must not create storage.
    const count = async () => {
      const pinned = await anchors.pinned(issuer);
      if (pinned) await ledgers.record(issuer, nonce, pinned.ledgerShards, codes);
    };
    c.executionCtx.waitUntil(count().catch((err) => console.error("counter update failed", err)));
  }
  return c.json(decision, malformed ? 400 : 200);
});

import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { readStrictJson, requireObject } from "../http.js";
import { verifyEnvelope } from "../protocol/envelope-verify.js";
import { answerDecision, parseDecisionCall, presentedNonce, verifyDeps } from "./decision-call.js";

const ENVELOPE_CALL_FIELDS = new Set(["envelope", "audience", "mode", "at"]);

export const envelopeRoutes = new Hono<AppEnv>();

/** An Evidence Envelope (CCS §11): see verifyEnvelope for what is checked. */
envelopeRoutes.post("/verify", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_VERIFY_BODY, { field: "envelope", code: "ENVELOPE_MALFORMED" }), "body");
  const call = parseDecisionCall(c, body, ENVELOPE_CALL_FIELDS, "envelope");
  const judged = await verifyEnvelope(body.envelope, { ...call, policy: freshnessPolicy(c.env), orgId: c.env.ORG_ID || null }, verifyDeps(c.get("services")));
  if (!judged.envelope) return answerDecision(c, judged.decision, undefined);
  const { envelope } = judged;
  const answer = { ...judged.decision, envelope: { hop_count: envelope.hop_count, child_trace_id: envelope.child_trace_id, cross_org: judged.crossOrg } };
  return answerDecision(c, answer, presentedNonce(envelope.original_receipt));
});

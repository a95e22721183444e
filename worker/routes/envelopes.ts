import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { EnvelopeCall } from "../contract/schemas.js";
import { jsonBody, readStrictJson, validateBody } from "../http.js";
import { verifyEnvelope } from "../protocol/envelope-verify.js";
import { answerDecision, parseDecisionCall, verifierClasses, verifyDeps } from "./decision-call.js";

export const envelopeRoutes = new Hono<AppEnv>()
  /** An Evidence Envelope (CCS §11): see verifyEnvelope for what is checked. */
  .post("/verify", jsonBody(EnvelopeCall), async (c) => {
  const body = validateBody(EnvelopeCall, await readStrictJson(c, MAX_VERIFY_BODY, { field: "envelope", code: "ENVELOPE_MALFORMED" }));
  const call = parseDecisionCall(c, body, "envelope");
  const classes = verifierClasses(c, call.audience, verifyDeps(c.get("services")));
  const judged = await verifyEnvelope(body.envelope, { ...call, policy: freshnessPolicy(c.env), orgId: c.env.ORG_ID || null, receiptChecks: (r) => classes.check(r.issuer) }, classes.deps);
  if (!judged.envelope) return answerDecision(c, classes.report(judged.decision));
  const { envelope } = judged;
  const answer = { ...classes.report(judged.decision), envelope: { hop_count: envelope.hop_count, child_trace_id: envelope.child_trace_id, cross_org: judged.crossOrg } };
  return answerDecision(c, answer);
});

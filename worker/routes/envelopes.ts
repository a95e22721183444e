import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import { EnvelopeCall } from "../contract/schemas.js";
import { readStrictJson, validateBody } from "../http.js";
import type { PinnedIssuer } from "../protocol/anchors.js";
import { sha256Hex } from "../protocol/digest.js";
import { checkEnvelope, parseEnvelope } from "../protocol/envelope.js";
import { rejection, verifyReceipt } from "../protocol/verify.js";
import { answerDecision, parseDecisionCall, verifyDeps } from "./decision-call.js";

export const envelopeRoutes = new Hono<AppEnv>();

/**
 * An Evidence Envelope: its receipt's steps 0–3 (in enforce mode its nonce is consumed exactly
 * as on the receipt route, only when every check passed) plus the envelope's own checks. A
 * cross-org envelope's signature must verify under the key it carries, which must be the one
 * its trust_anchor_reference names and one pinned for the issuer.
 */
envelopeRoutes.post("/verify", async (c) => {
  const body = validateBody(EnvelopeCall, await readStrictJson(c, MAX_VERIFY_BODY, { field: "envelope", code: "ENVELOPE_MALFORMED" }));
  const call = parseDecisionCall(c, body, "envelope");
  const parsed = parseEnvelope(body.envelope);
  if (!parsed.ok) return answerDecision(c, rejection(parsed.failures, call.mode, call.now));
  const { envelope, crossOrg } = parsed;
  const services = c.get("services");
  const deps = verifyDeps(services);
  const keyFingerprint = crossOrg ? await sha256Hex(crossOrg.issuerPublicKey) : null;
  let pinnedFingerprints: string[] = [];
  let senderOrgId: string | null = null;
  const anchors = async (issuer: string): Promise<PinnedIssuer | null> => {
    const pinned = await deps.anchors(issuer);
    pinnedFingerprints = pinned?.keys.map((k) => k.fingerprint) ?? [];
    senderOrgId = pinned?.orgId ?? null;
    // Self-contained: the signature must verify under the included key, when that key is pinned.
    if (!pinned || !keyFingerprint || !pinnedFingerprints.includes(keyFingerprint)) return pinned;
    return { ...pinned, keys: pinned.keys.filter((k) => k.fingerprint === keyFingerprint) };
  };
  const decision = await verifyReceipt(
    envelope.original_receipt,
    {
      ...call,
      policy: freshnessPolicy(c.env),
      contextChecks: (r, receiptHash) => checkEnvelope(envelope, crossOrg, r, receiptHash, { orgId: c.env.ORG_ID || null, senderOrgId, keyFingerprint, pinnedFingerprints }),
    },
    { ...deps, anchors },
  );
  const answer = { ...decision, envelope: { hop_count: envelope.hop_count, child_trace_id: envelope.child_trace_id, cross_org: crossOrg !== null } };
  return answerDecision(c, answer);
});

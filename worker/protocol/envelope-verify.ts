/**
 * An Evidence Envelope judged as a whole: its receipt's steps 0–3 (and, in enforce mode, the
 * nonce claim) plus the envelope's own checks. A cross-org envelope's signature must verify
 * under the key it carries, which must be the one its trust_anchor_reference names and one
 * pinned for the issuer. Shared by the envelope route and delegated intake.
 */
import type { PinnedIssuer } from "./anchors.js";
import { sha256Hex } from "./digest.js";
import { checkEnvelope, parseEnvelope, type Envelope } from "./envelope.js";
import type { FreshnessPolicy } from "./checks/freshness.js";
import { rejection, verifyReceipt, type Decision, type Idempotency, type Mode, type VerifyDeps } from "./verify.js";
import type { Failure } from "./codes.js";
import type { Receipt } from "./receipt.js";
import { isJsonObject } from "./strict-json.js";
import { isLevel0Shape, level0Refused } from "./conformance/level0.js";

export interface EnvelopeCall {
  audience: string;
  mode: Mode;
  now: number;
  policy: FreshnessPolicy;
  /** This deployment's organisation: a cross-org envelope must name it as receiver. */
  orgId: string | null;
  /** An enforce call's retry identity (see verifyReceipt). */
  idempotency?: Idempotency;
  /** The caller's own further stateless checks of the receipt (its verifier-class floor), run before any nonce is consumed. */
  receiptChecks?: (r: Receipt) => Failure[];
  /** Told the fingerprint of the pinned key the original receipt's signature verified under (see verifyReceipt). */
  onSigned?: (fingerprint: string) => void;
}

export type EnvelopeDecision = { decision: Decision; envelope: Envelope | null; crossOrg: boolean };

export async function verifyEnvelope(value: unknown, call: EnvelopeCall, deps: VerifyDeps): Promise<EnvelopeDecision> {
  // An HMAC proves nothing outside its trust domain: a Level 0 receipt never travels in an envelope.
  if (isJsonObject(value) && isLevel0Shape(value.original_receipt)) return { decision: rejection([level0Refused("an envelope")], call.mode, call.now), envelope: null, crossOrg: false };
  const parsed = parseEnvelope(value);
  if (!parsed.ok) return { decision: rejection(parsed.failures, call.mode, call.now), envelope: null, crossOrg: false };
  const { envelope, crossOrg } = parsed;
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
      audience: call.audience,
      mode: call.mode,
      now: call.now,
      policy: call.policy,
      idempotency: call.idempotency,
      onSigned: call.onSigned,
      contextChecks: (r, receiptHash) => [
        ...checkEnvelope(envelope, crossOrg, r, receiptHash, { orgId: call.orgId, senderOrgId, keyFingerprint, pinnedFingerprints }),
        ...(call.receiptChecks?.(r) ?? []),
      ],
    },
    { ...deps, anchors },
  );
  return { decision, envelope, crossOrg: crossOrg !== null };
}

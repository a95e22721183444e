/**
 * Evidence Envelopes (CCS §11): a receipt handed on from one agent to the next, optionally
 * across organisations with the issuer's key carried along (the self-contained profile).
 */
import { failure, type Failure } from "./codes.js";
import { fromBase64Url, HEX16, HEX64, SHA256_REF } from "./encoding.js";
import { isJsonObject as isObject } from "./strict-json.js";
import { isHttpsUri, type Receipt } from "./receipt.js";

export const ENVELOPE_VERSION = "1.3";
/** The highest hop_count an envelope may carry. */
export const MAX_HOP_COUNT = 16;

const BASE_FIELDS = ["envelope_version", "original_receipt", "parent_trace_id", "child_trace_id", "delegation_reason", "hop_count", "previous_receipt_hash"];
const CROSS_ORG_FIELDS = ["sender_org_id", "receiver_org_id", "trust_anchor_reference", "self_contained", "issuer_public_key"];
const ALL_FIELDS = new Set([...BASE_FIELDS, ...CROSS_ORG_FIELDS]);

export interface Envelope {
  envelope_version: "1.3";
  original_receipt: unknown;
  parent_trace_id: string;
  child_trace_id: string;
  delegation_reason: string;
  hop_count: number;
  /** Null (or left out) at hop 0 only: a chain of length zero has no predecessor (CCS §11). */
  previous_receipt_hash: string | null;
}

export interface CrossOrg {
  sender_org_id: string;
  receiver_org_id: string;
  /** The full fingerprint of the included key. */
  trust_anchor_reference: string;
  /** The raw 32-byte issuer key. */
  issuerPublicKey: Uint8Array;
}

export type EnvelopeParse =
  | { ok: true; envelope: Envelope; crossOrg: CrossOrg | null }
  | { ok: false; failures: Failure[] };


/**
 * The envelope's own form. A cross-org envelope (any cross-org field present) whose receipt
 * signature or included key has been stripped is NOT_SELF_CONTAINED (CCS 13.11): it is
 * refused, never verified some weaker way.
 */
export function parseEnvelope(value: unknown): EnvelopeParse {
  const malformed = (detail: string): EnvelopeParse => ({ ok: false, failures: [failure("ENVELOPE_MALFORMED", detail)] });
  if (!isObject(value)) return malformed("envelope must be a JSON object");
  for (const key of Object.keys(value)) if (!ALL_FIELDS.has(key)) return malformed(`unknown field ${JSON.stringify(key)}`);
  for (const key of BASE_FIELDS) if (!Object.hasOwn(value, key) && key !== "previous_receipt_hash") return malformed(`missing field ${key}`);
  const e = value as Record<string, unknown>;
  if (e.envelope_version !== ENVELOPE_VERSION) return malformed(`envelope_version must be "${ENVELOPE_VERSION}"`);
  if (!isObject(e.original_receipt)) return malformed("original_receipt must be a JSON object");
  if (typeof e.parent_trace_id !== "string" || !HEX16.test(e.parent_trace_id)) return malformed("parent_trace_id must be 16 lowercase hex");
  if (typeof e.child_trace_id !== "string" || !HEX16.test(e.child_trace_id)) return malformed("child_trace_id must be 16 lowercase hex");
  if (typeof e.delegation_reason !== "string") return malformed("delegation_reason must be a string");
  if (!Number.isSafeInteger(e.hop_count) || (e.hop_count as number) < 0) return malformed("hop_count must be an integer >= 0");
  // Hop 0 has no predecessor, and that is no error: its previous_receipt_hash may be left out or null.
  const previous = Object.hasOwn(e, "previous_receipt_hash") ? e.previous_receipt_hash : undefined;
  if ((previous === undefined || previous === null) && e.hop_count !== 0) return malformed(previous === undefined ? "missing field previous_receipt_hash" : "previous_receipt_hash may be null at hop 0 only");
  if (previous !== undefined && previous !== null && (typeof previous !== "string" || !SHA256_REF.test(previous))) return malformed('previous_receipt_hash must be "sha256:" + 64 lowercase hex');
  const envelope = { ...e, previous_receipt_hash: previous ?? null } as unknown as Envelope;
  if (!CROSS_ORG_FIELDS.some((k) => Object.hasOwn(e, k))) return { ok: true, envelope, crossOrg: null };

  if (!isHttpsUri(e.sender_org_id)) return malformed("a cross-org envelope needs sender_org_id, an https:// URI");
  if (!isHttpsUri(e.receiver_org_id)) return malformed("a cross-org envelope needs receiver_org_id, an https:// URI");
  const stripped = (detail: string): EnvelopeParse => ({ ok: false, failures: [failure("NOT_SELF_CONTAINED", detail)] });
  if (e.self_contained !== true) return stripped("a cross-org envelope must be self_contained: true");
  const receipt = e.original_receipt as Record<string, unknown>;
  if (typeof receipt.signature !== "string" || receipt.signature === "") return stripped("the original receipt's signature has been stripped");
  if (typeof e.issuer_public_key !== "string" || e.issuer_public_key === "") return stripped("the issuer's public key has been stripped");
  const key = fromBase64Url(e.issuer_public_key);
  if (!key || key.length !== 32) return stripped("issuer_public_key is not base64url of a raw 32-byte key");
  if (typeof e.trust_anchor_reference !== "string" || !HEX64.test(e.trust_anchor_reference)) return stripped("trust_anchor_reference must be the key's full fingerprint (64 lowercase hex)");
  return {
    ok: true,
    envelope,
    crossOrg: { sender_org_id: e.sender_org_id, receiver_org_id: e.receiver_org_id, trust_anchor_reference: e.trust_anchor_reference, issuerPublicKey: key },
  };
}

/**
 * The envelope's checks against the receipt it carries (run with the receipt's own steps 0–3).
 * `keyFingerprint` is the fingerprint of the included key; `pinnedFingerprints` those pinned
 * for the receipt's issuer; `senderOrgId` the organisation its anchor was pinned with.
 */
export function checkEnvelope(
  e: Envelope,
  crossOrg: CrossOrg | null,
  r: Receipt,
  receiptHash: string,
  context: { orgId: string | null; senderOrgId: string | null; keyFingerprint: string | null; pinnedFingerprints: string[] },
): Failure[] {
  const out: Failure[] = [];
  if (e.parent_trace_id !== r.trace_id) out.push(failure("CHAIN_BROKEN", "parent_trace_id is not the original receipt's trace_id"));
  if (e.previous_receipt_hash !== null && e.previous_receipt_hash !== receiptHash) out.push(failure("CHAIN_BROKEN", "previous_receipt_hash is not the original receipt's receipt_hash"));
  if (e.hop_count > MAX_HOP_COUNT) out.push(failure("HOP_LIMIT_EXCEEDED", `hop_count ${e.hop_count} exceeds ${MAX_HOP_COUNT}`));
  if (crossOrg) {
    if (context.orgId === null || crossOrg.receiver_org_id !== context.orgId) {
      out.push(failure("ORG_MISMATCH", `receiver_org_id ${JSON.stringify(crossOrg.receiver_org_id)} is not this deployment (${context.orgId ?? "no ORG_ID configured"})`));
    }
    if (context.senderOrgId === null || crossOrg.sender_org_id !== context.senderOrgId) {
      out.push(failure("ORG_MISMATCH", `sender_org_id ${JSON.stringify(crossOrg.sender_org_id)} is not the organisation pinned for ${r.issuer}`));
    }
    if (context.keyFingerprint !== crossOrg.trust_anchor_reference) {
      out.push(failure("NOT_SELF_CONTAINED", "the included key's fingerprint is not trust_anchor_reference"));
    } else if (!context.pinnedFingerprints.includes(context.keyFingerprint)) {
      out.push(failure("UNTRUSTED_ISSUER", `the included key (${context.keyFingerprint.slice(0, 16)}) is not pinned for ${r.issuer}`));
    }
  }
  return out;
}

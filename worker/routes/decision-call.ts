/**
 * What the decision routes (receipts, envelopes) share: the call's common fields, the
 * protocol's dependencies, counting decisions, the answer's status.
 */
import type { Context } from "hono";
import type { AppEnv, Services } from "../app.js";
import { audiences } from "../config.js";
import { ApiError } from "../http.js";
import type { Decision, Idempotency, Mode, VerifyDeps } from "../protocol/verify.js";
import { jcs } from "../protocol/digest.js";
import { observeDecision } from "../observability.js";

export interface DecisionCall {
  audience: string;
  mode: Mode;
  /** Unix seconds to judge at: `at` in audit mode, else now. */
  now: number;
  /** An enforce call's `Idempotency-Key`, scoped to its relying party. */
  idempotency?: Idempotency;
}

/** An `Idempotency-Key` header: 1 to 255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The fields every decision call shares, already of their form (its contract schema). */
interface CommonCall {
  audience: string;
  mode?: Mode;
  at?: number;
}

/** What the schema cannot say: the subject is present, the audience is the caller's, `at` only in audit mode. */
export function parseDecisionCall(c: Context<AppEnv>, body: CommonCall, subject: string): DecisionCall {
  if (!Object.hasOwn(body, subject)) throw new ApiError(400, "MALFORMED_REQUEST", `${subject} is required`);
  const mode = body.mode ?? "enforce";
  c.set("mode", mode);
  if (!audienceAllowed(c, body.audience)) throw new ApiError(403, "AUDIENCE_NOT_ALLOWED", "this relying party may not verify for that audience");
  if (body.at !== undefined && mode !== "audit") throw new ApiError(400, "MALFORMED_REQUEST", "at is only accepted in audit mode");
  const key = c.req.header("idempotency-key");
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw new ApiError(400, "MALFORMED_REQUEST", "Idempotency-Key must be 1-255 visible ASCII characters");
  // Audit calls consume nothing, so they have nothing to make retry-safe: the key is ignored there.
  // The call is the route and the canonical body: a retry must be the very same call.
  const idempotency = key !== undefined && mode === "enforce" ? { caller: c.get("relyingParty").name, key, call: `${c.req.path}\n${jcs(body)}` } : undefined;
  return { audience: body.audience, mode, now: body.at ?? c.get("services").now(), ...(idempotency ? { idempotency } : {}) };
}

/** The caller's token lists the audience, and this deployment still serves it. */
export function audienceAllowed(c: Context<AppEnv>, audience: string): boolean {
  return c.get("relyingParty").audiences.includes(audience) && audiences(c.env).has(audience);
}

export function verifyDeps({ anchors, verifier, ledgers, manifests }: Services): VerifyDeps {
  return {
    anchors: (issuer) => anchors.pinned(issuer),
    verifier,
    ledger: (issuer, nonce, shards) => ledgers.forDecision(issuer, nonce, shards),
    manifestBinding: (issuer, configHash) => manifests.binding(issuer, configHash),
  };
}

const MALFORMED_CODES = new Set(["MALFORMED_RECEIPT", "ENVELOPE_MALFORMED"]);

/**
 * Answers a decision: 400 when what was presented is malformed, else 200. Every decision is
 * logged once; an enforce decision is counted in this isolate's batch, which reaches
 * DecisionStats after the answer: counting writes nothing on an issuer's ledger.
 */
export function answerDecision(c: Context<AppEnv>, decision: Decision): Response {
  const malformed = decision.failures.find((f) => MALFORMED_CODES.has(f.code));
  observeDecision(c, decision, malformed ? 400 : 200);
  // A malformed subject is a 400, in the one error shape every 4xx shares.
  if (malformed) return c.json({ ...decision, error: { code: malformed.code, detail: malformed.detail } }, 400);
  if (decision.idempotent_replay) c.header("Idempotent-Replayed", "true");
  return c.json(decision, 200);
}

/**
 * What the decision routes (receipts, envelopes) share: the call's common fields, the
 * protocol's dependencies, counting decisions, the answer's status.
 */
import { partyScope } from "../protocol/relying-parties.js";
import type { Context } from "hono";
import type { AppEnv, Services } from "../app.js";
import { audiences, dependencyTimeout } from "../config.js";
import { ApiError, clipFailureDetails, fieldValue } from "../http.js";
import { VerifierUnavailable, type Decision, type Idempotency, type Mode, type VerifyDeps } from "../protocol/verify.js";
import { jcs } from "../protocol/digest.js";
import { observeDecision } from "../observability.js";
import { withoutForeignNonceState } from "../protocol/nonce-state.js";
import type { PinnedIssuer } from "../protocol/anchors.js";
import type { Failure } from "../protocol/codes.js";
import { checkVerifierClass, reviewWarning, strictestFloor, type VerifierClass } from "../protocol/conformance/verifier-class.js";
import { readFlagged } from "../stores.js";

/** A decision as the decision routes answer it: with the issuer's verifier class (CCS §9). */
export type ClassedDecision = Decision & { verifier_class: VerifierClass | null };

/**
 * The verifier-class side of one decision call (CCS §9, 13.7). `deps` remembers the anchor each
 * issuer was judged under, so nothing is read twice; `check` is the relying party's floor for the
 * call's audience (given several, as a chain's, the strictest of its floors for them), run with
 * the stateless checks (a refused receipt consumes no nonce); `report` adds the class to the
 * decision and, when the counters flag the issuer as allow-only, the VERIFIER_REVIEW_REQUIRED
 * warning. A flagged issuer is judged as Class C whatever it declares: the draft's 13.7 asks the
 * relying party to treat it so until it is reviewed. While this isolate has never learned the
 * flags, a floor above Class C that the declared class meets cannot be judged: `check` throws
 * VerifierUnavailable (503, nothing consumed) rather than accept on the declared class.
 */
export function verifierClasses(c: Context<AppEnv>, audience: string | readonly string[], base: VerifyDeps) {
  const seen = new Map<string, PinnedIssuer | null>();
  const { decisions, reviewThreshold } = c.get("services");
  // A chain's receipts are addressed to several audiences: the strictest of the party's floors for them holds.
  const floors = c.get("relyingParty").min_verifier_class ?? {};
  const floorFor = (a: string) => (Object.hasOwn(floors, a) ? floors[a] : null);
  // One audience (every decision call, on the verify path) is one look-up.
  const floor = typeof audience === "string" ? floorFor(audience) : strictestFloor(audience.map(floorFor));
  // Only a floor above Class C can refuse an issuer for its flag: the common call has none.
  const floored = floor !== null && floor !== "C";
  const effective = (issuer: string, pinned: PinnedIssuer): VerifierClass => (decisions.flagged(issuer) ? "C" : pinned.verifierClass);
  // The flags are learned at this isolate's flushes; one that has not learned them yet reads them
  // beside its first anchor read, and again beside that of each call with a floor until a read succeeds.
  const readReview = () =>
    readFlagged(c.env, reviewThreshold, dependencyTimeout(c.env)).catch((err) => {
      console.error(JSON.stringify({ event: "review_flags_unread", error: String(err) }));
      return null;
    });
  const background = (loading: Promise<void>) => {
    try {
      c.executionCtx.waitUntil(loading);
    } catch {
      // No execution context (a bare app.request): the read runs on by itself.
    }
  };
  const deps: VerifyDeps = {
    ...base,
    anchors: async (issuer) => {
      const review = decisions.refreshReview(readReview, background, floored);
      const pinned = review ? (await Promise.all([base.anchors(issuer), review]))[0] : await base.anchors(issuer);
      seen.set(issuer, pinned);
      return pinned;
    },
  };
  return {
    deps,
    /** Remembers an anchor read outside `deps` (a Level 0 call reads its issuer itself). */
    saw: (issuer: string, pinned: PinnedIssuer | null) => void seen.set(issuer, pinned),
    check: (issuer: string): Failure[] => {
      const pinned = seen.get(issuer);
      if (!pinned) return [];
      const failures = checkVerifierClass(issuer, effective(issuer, pinned), floor);
      // Fail closed: an issuer that meets the floor only by its declared class may be flagged, unknown here.
      if (floored && failures.length === 0 && !decisions.reviewKnown()) throw new VerifierUnavailable("decision stats", new Error("the review flags (CCS 13.7) could not be read in this isolate yet"));
      return failures;
    },
    report: <D extends Decision>(d: D): D & { verifier_class: VerifierClass | null } => {
      const pinned = d.issuer !== null ? seen.get(d.issuer) : undefined;
      if (!pinned) return { ...d, verifier_class: null };
      const review = decisions.flagged(d.issuer!) ? [reviewWarning(d.issuer!, reviewThreshold)] : [];
      return { ...d, failures: [...d.failures, ...review], verifier_class: effective(d.issuer!, pinned) };
    },
  };
}

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
  // Audit calls consume nothing, so they have nothing to make retry-safe: the key is ignored there, whatever its form.
  const idempotency = mode === "enforce" ? idempotencyOf(c, body) : undefined;
  return { audience: body.audience, mode, now: body.at ?? c.get("services").now(), ...(idempotency ? { idempotency } : {}) };
}

/**
 * The `Idempotency-Key` of a call that consumes a nonce (an enforce decision, a live chain's
 * append), scoped to its relying party; 400 when not of its form. The call is the route and the
 * canonical body: a retry must be the very same call. Spaces or tabs after the key are no part of
 * the header's value (RFC 9110 §5.5), as for a bearer token.
 */
export function idempotencyOf(c: Context<AppEnv>, body: unknown): Idempotency | undefined {
  const header = c.req.header("idempotency-key");
  if (header === undefined) return undefined;
  const key = fieldValue(header);
  if (!IDEMPOTENCY_KEY.test(key)) throw new ApiError(400, "MALFORMED_REQUEST", "Idempotency-Key must be 1-255 visible ASCII characters");
  return { caller: partyScope(c.get("relyingParty")), key, call: `${c.req.path}\n${jcs(body)}` };
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
export function answerDecision<D extends Decision>(c: Context<AppEnv>, judged: D): Response {
  // A failure's detail can quote the subject (an unknown field's name): cut as an error's is (clipText).
  // clipFailureDetails answers the same list when nothing is cut, so an accepted receipt's decision is not copied.
  const shown = withoutForeignNonceState(judged);
  const failures = clipFailureDetails(shown.failures);
  const decision = failures === shown.failures ? shown : { ...shown, failures };
  const malformed = decision.failures.find((f) => MALFORMED_CODES.has(f.code));
  observeDecision(c, decision, malformed ? 400 : 200);
  // A malformed subject is a 400, in the one error shape every 4xx shares.
  if (malformed) return c.json({ ...decision, error: { code: malformed.code, detail: malformed.detail } }, 400);
  if (decision.idempotent_replay) c.header("Idempotent-Replayed", "true");
  return c.json(decision, 200);
}

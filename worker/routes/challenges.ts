/**
 * The challenge loop on Workers (CCS §4.7): an intake deny for missing evidence opens a challenge
 * in the trace's IntakeChallenges object, and `POST /v1/intake/{trace_id}/evidence` (intake token)
 * answers it: before the deadline the same Command is judged again with the evidence and a fresh
 * receipt is issued; after it CHALLENGE_EXPIRED, and the deny stands: the trace's journal record,
 * which waited in awaiting_approval, is closed as denied (by the challenge's alarm at the deadline,
 * or by the late answer if it comes first). The rules live in
 * worker/protocol/issuing/challenge.ts; this module stores and routes.
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import type { StoredChallenge, Take } from "../../durable-objects/intake-challenges.js";
import { audiences, freshnessPolicy, issuing, MAX_ADMIN_BODY, type Issuing } from "../config.js";
import { EvidenceCall } from "../contract/schemas.js";
import { ApiError, readStrictJson, validateBody, withTimeout } from "../http.js";
import { HEX16 } from "../protocol/encoding.js";
import { seconds } from "../protocol/checks/freshness.js";
import { recordIdOf } from "../protocol/journal/core.js";
import { buildChallenge, challengeDeadline, evidenceProblem, intakeMessage, type Challenge, type EvidenceGap } from "../protocol/issuing/challenge.js";
import { IntakeError, parseIntake, type Intake } from "../protocol/issuing/command.js";
import { verifyDelegation } from "../protocol/issuing/delegation.js";
import type { Admission, IssuingDeps } from "../protocol/issuing/lifecycle.js";
import { dependencyTimeout } from "../config.js";
import { answeredByEvidence, closeExpiredChallenge, INTAKE_TENANT, markCause } from "../journal-store.js";
import { exportToolExecution } from "../observability.js";
import { verifyDeps } from "./decision-call.js";
import { refuseIfOwnKeyRevoked } from "../own-key.js";
import { awaitingEvidence, recordEvidencedAdmission, signedContexts, sizedAdmission, type AwaitingRecord } from "./intake.js";

/** What issuing needs from the Worker: clock, randomness, the key's sequence, signer, rules, delegation check. */
export function admissionDeps(c: Context<AppEnv>, { identity, signer }: Issuing): IssuingDeps {
  const services = c.get("services");
  const overrides = services.intake;
  return {
    now: overrides.now ?? services.now,
    randomBytes: (n) => crypto.getRandomValues(new Uint8Array(n)),
    nextSequence: overrides.nextSequence ?? (() => services.sequences.next(identity.fingerprint)),
    signer: overrides.signer ?? signer,
    inputRules: overrides.inputRules,
    delegation: (value) =>
      verifyDelegation(value, { audiences: [...audiences(c.env)], now: services.now(), policy: freshnessPolicy(c.env), orgId: c.env.ORG_ID || null, signedContexts: (traceId) => signedContexts(c, traceId) }, verifyDeps(services)),
  };
}

/**
 * The stored Command with the evidence added, each checked in its own form. The Command was
 * admitted within the intake message limit; the evidence (64 KiB call, an approval of at most
 * 512-byte approver) is not counted against that limit with it, or a Command within a few hundred
 * bytes of the limit would be given a challenge that no evidence could answer. The Command is
 * parsed without the evidence it carried (an earlier answer's included), the evidence on a
 * carrier of the Command's small fields: the limits of each are the intake's own.
 */
export function withEvidence(message: Record<string, unknown>, evidence: Record<string, unknown>): Intake {
  const { human_approval, server_profile, ...rest } = message;
  const command = parseIntake(rest);
  const carried = { ...(human_approval === undefined ? {} : { human_approval }), ...(server_profile === undefined ? {} : { server_profile }), ...evidence };
  const { intake_version, agent_id, tool, timestamp, trace_id } = rest;
  const given = parseIntake({ intake_version, agent_id, tool, params: {}, timestamp, trace_id, ...carried });
  return { ...command, humanApproval: given.humanApproval, serverProfile: given.serverProfile };
}

const challenges = (c: Context<AppEnv>, traceId: string) => c.env.INTAKE_CHALLENGES.get(c.env.INTAKE_CHALLENGES.idFromName(traceId));
const stored = <T>(c: Context<AppEnv>, work: Promise<T>) => withTimeout(work, dependencyTimeout(c.env), "challenge store");

/** The challenge an admission that lacks evidence opens, as stored and as answered. */
async function challengeOf(c: Context<AppEnv>, admission: Admission): Promise<{ record: StoredChallenge; challenge: Challenge }> {
  const { receipt } = admission;
  const { manifest } = await issuing(c.env);
  // A delegated Command's evidence is judged with its parent, which must still verify then: the
  // deadline is the policy's or the parent's last valid instant, whichever comes first.
  const policyDeadline = challengeDeadline(receipt.issued_at, manifest.content.challenge_policy);
  const deadline = admission.parentValidUntil === undefined ? policyDeadline : Math.min(policyDeadline, seconds(admission.parentValidUntil));
  const record: StoredChallenge = { message: JSON.stringify(intakeMessage(admission.intake)), audience: receipt.audience, gaps: JSON.stringify(admission.gaps), issued_at: receipt.issued_at, expires_at: deadline };
  return { record, challenge: buildChallenge(receipt.trace_id, admission.gaps, receipt.issued_at, deadline) };
}

/**
 * Opens the challenge of an admission that lacks evidence, before the journal records it, and
 * answers it; null when nothing is missing. The attempt is named by its receipt's nonce. A
 * challenge an earlier attempt's recorded admission confirmed is kept as it is.
 */
export async function openChallenge(c: Context<AppEnv>, admission: Admission): Promise<Challenge | null> {
  if (admission.gaps.length === 0) return null;
  const { record, challenge } = await challengeOf(c, admission);
  const { nonce, trace_id } = admission.receipt;
  const open = c.get("services").intake.openChallenge ?? ((r: StoredChallenge, attempt: string) => challenges(c, trace_id).open(r, attempt));
  await stored(c, Promise.resolve(open(record, nonce)));
  return challenge;
}

/**
 * The journal recorded this admission: its challenge is the trace's, whichever attempt of the same
 * intake sent at once opened last, so the deadline it announced is the one that holds.
 */
export async function confirmChallenge(c: Context<AppEnv>, admission: Admission): Promise<void> {
  const { record } = await challengeOf(c, admission);
  const { nonce, trace_id } = admission.receipt;
  const confirm = c.get("services").intake.confirmChallenge ?? ((r: StoredChallenge, attempt: string) => challenges(c, trace_id).confirm(r, attempt));
  await stored(c, Promise.resolve(confirm(record, nonce)));
}

/**
 * The challenge a retry of a challenged intake is answered with while it is still open: what is
 * still missing and the deadline that holds. Best effort: a store that cannot be read is logged and
 * the retry answered without it (the challenge is unchanged, and its answer route still takes it).
 */
export async function pendingChallenge(c: Context<AppEnv>, traceId: string): Promise<Challenge | null> {
  try {
    const row = await stored(c, Promise.resolve(challenges(c, traceId).pending(c.get("services").now())));
    return row ? buildChallenge(traceId, JSON.parse(row.gaps) as EvidenceGap[], row.issued_at, row.expires_at) : null;
  } catch (err) {
    console.error(JSON.stringify({ event: "challenge_read_failed", trace_id: traceId, error: String(err) }));
    return null;
  }
}

/** The intake answer: the receipt, its runtime context, the rule results, and the challenge when evidence is missing. */
export function admissionAnswer(admission: Admission, challenge: Challenge | null) {
  const { receipt, runtime_context, results } = admission;
  return { receipt, ...(runtime_context ? { runtime_context } : {}), rules: results, ...(challenge ? { challenge } : {}) };
}

export const challengeRoutes = new Hono<AppEnv>()
  /**
   * Answers a challenge with the missing evidence. The Command is the stored one; only the evidence
   * the challenge asked for may be added. Still missing something: a fresh deny with the challenge
   * kept open until the same deadline.
   */
  .post("/:trace_id/evidence", async (c) => {
  const traceId = c.req.param("trace_id");
  if (!HEX16.test(traceId)) throw new ApiError(400, "MALFORMED_REQUEST", "trace_id must be 16 lowercase hex");
  const evidence = validateBody(EvidenceCall, await readStrictJson(c, MAX_ADMIN_BODY));
  const own = await issuing(c.env);
  const store = challenges(c, traceId);
  const taken = (await stored(c, store.take(c.get("services").now()) as Promise<unknown>)) as Take;
  if (taken.kind === "unknown") throw new ApiError(404, "NOT_FOUND", "no challenge is open for this trace_id");
  // The row's `answered` mark is best effort (below): when the row says expired or being judged,
  // the journal is asked whether an answer was recorded, and its word is the answer.
  const journal = c.get("services").journal(INTAKE_TENANT).port;
  const markAnswered = c.get("services").intake.markAnswered ?? (() => Promise.resolve(store.answered()));
  const recorded = async (): Promise<boolean> => {
    try {
      return answeredByEvidence(await journal.loadByIdempotency(traceId));
    } catch (err) {
      console.error(JSON.stringify({ event: "challenge_journal_read_failed", trace_id: traceId, error: String(err) }));
      return false;
    }
  };
  const alreadyAnswered = () =>
    new ApiError(409, "CHALLENGE_ANSWERED", `this challenge was already answered with its evidence; the receipt that answer earned is the record's latest, on GET /v1/evidence/${traceId} (the intake sent again answers the challenged deny)`);
  /** The journal recorded an answer the row does not know of: the mark is written again (best effort), and the caller told so. */
  const answeredAlready = async () => {
    try {
      await stored(c, markAnswered(traceId));
    } catch (err) {
      console.error(JSON.stringify({ event: "challenge_answered_mark_failed", trace_id: traceId, error: String(err) }));
    }
    return alreadyAnswered();
  };
  if (taken.kind === "expired") {
    let answered: boolean;
    if (taken.answering) answered = await recorded();
    else {
      // The deny stands, unless an answer was recorded: the record stops waiting now, if the challenge's alarm has not closed it yet.
      try {
        answered = (await closeExpiredChallenge(journal, traceId, taken.expires_at, (record, entries) => exportToolExecution(c, "intake", record, entries))) === "answered";
      } catch (err) {
        // The answer is the same either way; the alarm tries again.
        console.error(JSON.stringify({ event: "challenge_close_failed", trace_id: traceId, error: String(err) }));
        answered = false;
      }
    }
    if (answered) throw await answeredAlready();
    throw new ApiError(409, "CHALLENGE_EXPIRED", `the challenge expired at ${taken.expires_at}; the deny stands`);
  }
  // A runtime that lost the answer's response retries here (or the intake, which answers the
  // challenged deny again): say where the receipt that answer earned is.
  if (taken.kind === "answered") throw alreadyAnswered();
  // Not answered yet: another answer holds it while it is judged, and one that falls short gives it back.
  if (taken.kind === "judging") {
    if (await recorded()) throw await answeredAlready();
    throw new ApiError(409, "CHALLENGE_ANSWERED", "another answer to this challenge is being judged right now; if it falls short the challenge is given back: send this answer again (GET /v1/evidence/{trace_id} shows the record still awaiting_approval)");
  }
  const { challenge } = taken;
  let admission: Admission;
  let decision: Parameters<typeof recordEvidencedAdmission>[3];
  let awaiting: AwaitingRecord | undefined;
  try {
    const gaps = JSON.parse(challenge.gaps) as EvidenceGap[];
    const problem = evidenceProblem(evidence, gaps);
    if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
    const intake = withEvidence(JSON.parse(challenge.message) as Record<string, unknown>, evidence);
    await refuseIfOwnKeyRevoked(c, own);
    // CCS §14: a trace admitted under a key since revoked is marked for reconciliation and can never
    // start, so no evidence can move it on; the challenge is given back as it was.
    const mark = await c.get("services").journal(INTAKE_TENANT).markOf(recordIdOf(traceId));
    if (mark) throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `this trace's admission ${markCause(mark)}: it is marked for reconciliation, and no evidence can move it on`);
    // The fresh receipt is signed under the configuration in force now, which may not be the one the
    // deny was issued under: it is recorded first, as intake records it, so GET /v1/config/{hash}
    // answers it after the next change.
    await c.get("services").manifests.recordCurrent(c.get("services").now());
    // Judged and measured, and the record checked, before a sequence number is spent on it.
    ({ admission, decision } = await sizedAdmission(intake, challenge.audience, own, admissionDeps(c, own), null, async (draft) => {
      awaiting = await awaitingEvidence(c, traceId, draft);
    }));
  } catch (err) {
    await stored(c, store.release(null));
    if (err instanceof IntakeError) throw new ApiError(400, "MALFORMED_REQUEST", err.detail);
    throw err;
  }
  try {
    await recordEvidencedAdmission(c, awaiting!, admission, decision);
  } catch (err) {
    // Nothing was recorded: the challenge is given back for another answer before its deadline (a
    // record that no longer waits refuses that answer again, CHALLENGE_ANSWERED).
    await stored(c, store.release(null));
    throw err;
  }
  // Still short: the challenge stays open for what is missing, and keeps what this answer brought.
  if (admission.gaps.length > 0) await stored(c, store.release(JSON.stringify(admission.gaps), JSON.stringify(intakeMessage(admission.intake))));
  // Recorded and needing no other answer (an allow, or a deny a check made final): answered for good.
  // Only what later answers are told depends on it, and they ask the journal when the row says
  // otherwise (above), so the receipt is answered even if the mark fails.
  else {
    try {
      await stored(c, markAnswered(traceId));
    } catch (err) {
      console.error(JSON.stringify({ event: "challenge_answered_mark_failed", trace_id: traceId, error: String(err) }));
    }
  }
  const next = admission.gaps.length > 0 ? buildChallenge(traceId, admission.gaps, admission.receipt.issued_at, challenge.expires_at) : null;
  return c.json(admissionAnswer(admission, next));
});

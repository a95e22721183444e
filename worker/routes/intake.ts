/**
 * POST /v1/intake (CCS §3): a Command in, a signed admission receipt out, or an intake error
 * `{error: {code, retry, detail, trace_id?}}` and never both. Everything on the path, parsing to
 * signing, runs inside one deadline and one catch: a timeout is INTAKE_TIMEOUT, any exception
 * INTAKE_FAILED, so a failure can only ever be an error answer (fail closed).
 *
 * The admission is durable before it is answered (CCS §4.2 phase a): the trace_id is reserved in
 * the receipt journal with the digest of everything that decides the admission, the Command is
 * judged and signed, and the decision is appended with its signed receipt in one journal
 * transaction; only then does the answer leave. A retry of the same intake is answered with the
 * admission already held (no second sequence number, no second nonce; for a challenged deny, that
 * deny as first issued, whatever its challenge brought since); the same trace_id with
 * anything else is INTAKE_TRACE_CONFLICT. An admission that lacks evidence (a deny with a
 * challenge, CCS §4.7) waits in `awaiting_approval` for that evidence rather than closing as denied.
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { audiences, freshnessPolicy, intakeTimeout, issuing, MAX_INTAKE_BODY, type Issuing } from "../config.js";
import { ApiError, clipText, loggedPath, MAX_DETAIL_CHARS, readStrictJson } from "../http.js";
import { INTAKE_RETRY, INTAKE_STATUS, type IntakeErrorCode } from "../protocol/codes.js";
import { IntakeError, parseIntake, type Intake } from "../protocol/issuing/command.js";
import { issueAdmission, sealReceipt, type Admission, type IssuingDeps } from "../protocol/issuing/lifecycle.js";
import type { ReceiptSigner } from "../protocol/issuing/signer.js";
import type { RuleResult } from "../protocol/issuing/rules/index.js";
import { jcs, prefixedDigest } from "../protocol/digest.js";
import { utf8 } from "../protocol/encoding.js";
import { DEFAULT_CLOCK_SKEW, type Receipt } from "../protocol/receipt.js";
import type { JournalEntry } from "../protocol/journal/port.js";
import type { JournalState } from "../protocol/journal/lifecycle.js";
import { INTAKE_TENANT } from "../journal-store.js";
import { exportToolExecution } from "../observability.js";
import { historySize, MAX_REPEATING_HISTORY, MAX_REPEATING_HISTORY_SIZE, MAX_TRANSITION_BYTES } from "../protocol/journal/core.js";
import { VerifierUnavailable } from "../protocol/verify.js";
import { admissionAnswer, admissionDeps, confirmChallenge, openChallenge, pendingChallenge } from "./challenges.js";
import { ownKeyRevoked } from "../own-key.js";
import type { Challenge } from "../protocol/issuing/challenge.js";
import type { SignedContext } from "../protocol/issuing/delegation.js";

class IntakeTimeout extends Error {}
/** This deployment's own signing key is revoked: intake answers INTAKE_FAILED, 503, and issues nothing. */
class SigningKeyRevoked extends Error {}

/**
 * Runs the intake under its deadline. The work is told when the deadline has passed (`late`) and
 * then starts nothing that lasts (admit: no reservation, sequence number, challenge or journal
 * append), so an intake answered INTAKE_TIMEOUT leaves no admission behind that a retry would be
 * answered with (a sequence number that came late used to be signed and journaled still).
 * Only a journal write already under way at the deadline may still land. A timed-out work is kept
 * alive until it has stopped (waitUntil), its result and its rejection dropped.
 */
function deadline<T>(c: Context<AppEnv>, work: (late: () => boolean) => Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  let expired = false;
  const running = work(() => expired);
  const settled = running.then(() => {}, () => {});
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      try {
        c.executionCtx.waitUntil(settled);
      } catch {
        /* no execution context (an in-process call): the work runs on by itself */
      }
      reject(new IntakeTimeout());
    }, ms);
  });
  return Promise.race([running, late]).finally(() => clearTimeout(timer));
}

/** The journal state an admission decides: allow is ready to start, deny is final, escalate awaits approval. */
const DECIDED: Record<Receipt["verdict"], JournalState> = { allow: "ready", deny: "denied", escalate: "awaiting_approval" };

/** A deny for missing evidence is not final: the record awaits the evidence its challenge names. */
export const decidedState = (admission: Pick<Admission, "receipt" | "gaps">): JournalState =>
  admission.gaps.length > 0 ? "awaiting_approval" : DECIDED[admission.receipt.verdict];

/**
 * The reservation's action digest: the Command and what beside it decides the admission (audience,
 * declared server profile), so a retry with any of it changed is a conflict. A human approval is
 * not part of it: it is what moves an escalated record on (awaiting_approval → ready or denied).
 */
const intakeDigest = (intake: Intake, audience: string): Promise<string> =>
  prefixedDigest(jcs({ command: intake.command, audience, server_profile: intake.serverProfile }));

interface DecisionDetail {
  runtime_context_jcs: string | null;
  rules: RuleResult[];
  approval_jcs: string | null;
  /** Fingerprint of the key the admission was signed under: what a revocation of that key finds it by (CCS §14). */
  admitted_under: string;
  /**
   * A delegated admission's: the keys its authority rests on, the one that signed its parent first
   * (then those the parent's own admission rested on), so a revocation of one of them marks it too (CCS §14).
   * Absent from an admission that was not delegated, and from those written before it was kept.
   */
  delegated_under?: string[];
}

/** The latest admission decision a record's history holds (the one an execution starts from), or null while it is only reserved. */
export function storedAdmission(history: readonly JournalEntry[]): (StoredAdmission & { approval_jcs: string | null }) | null {
  const entry = history.findLast((e) => e.event === "append" && (e.from === "awaiting_policy" || e.from === "awaiting_approval") && e.receipt);
  if (!entry) return null;
  const detail = entry.detail as unknown as DecisionDetail;
  return {
    receipt: entry.receipt as unknown as Receipt,
    runtime_context: detail.runtime_context_jcs === null ? null : (JSON.parse(detail.runtime_context_jcs) as Record<string, unknown>),
    results: detail.rules,
    approval_jcs: detail.approval_jcs,
  };
}

/** The keys the latest admission's delegation rests on (its parent's signer first), or none. */
export function delegatedUnderOf(history: readonly JournalEntry[]): string[] {
  const entry = history.findLast((e) => e.event === "append" && (e.from === "awaiting_policy" || e.from === "awaiting_approval") && e.receipt);
  const keys = (entry?.detail as Partial<DecisionDetail> | null | undefined)?.delegated_under;
  return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === "string") : [];
}

/**
 * What a retry of the original intake is answered with. A deny that was challenged (CCS §4.7) is
 * answered again as it was first issued, whatever its challenge has since brought (a fresh deny,
 * or the allow the evidence earned): the first receipt of a challenged Command is a deny whatever
 * follows, and what the evidence earned belongs to the answer of the evidence call. Any other
 * record is answered with its latest admission (an escalation moved on by its approval included).
 */
export function retriedAdmission(history: readonly JournalEntry[]): (StoredAdmission & { approval_jcs: string | null }) | null {
  const first = history.find((e) => e.event === "append" && e.from === "awaiting_policy" && e.receipt);
  const challenged = first && first.to === "awaiting_approval" && (first.receipt as unknown as Receipt).verdict === "deny";
  return storedAdmission(challenged ? [first] : history);
}

/**
 * The runtime contexts (canonical text) of every admission this deployment signed under a
 * trace_id, newest first: what a delegated intake reads its parent's signed delegation from. A
 * finalised receipt carries its admission's context over, so these cover it too. A record the
 * journal refuses is an error: the hop must not be guessed.
 */
export async function signedContexts(c: Context<AppEnv>, traceId: string): Promise<SignedContext[]> {
  const loaded = await c.get("services").journal(INTAKE_TENANT).port.loadByIdempotency(traceId);
  if (loaded.kind === "not-found") return [];
  if (loaded.kind !== "found") throw new Error(`journal record of ${traceId} refused: ${loaded.reason}`);
  return loaded.history
    .filter((e) => e.event === "append" && e.receipt && (e.from === "awaiting_policy" || e.from === "awaiting_approval"))
    .map((e) => e.detail as unknown as DecisionDetail)
    .filter((d) => d.runtime_context_jcs !== null)
    .map((d) => ({ text: d.runtime_context_jcs!, delegatedUnder: Array.isArray(d.delegated_under) ? d.delegated_under : [] }))
    .reverse();
}

/** What the journal keeps of an admission: enough to answer a retry with it. */
type StoredAdmission = Pick<Admission, "receipt" | "runtime_context" | "results">;
/** A fresh admission (judged now), or the one the journal already held (a retry). */
type Admitted = (Admission & { replay: false; challenge: Challenge | null }) | (StoredAdmission & { replay: true; challenge: Challenge | null });

/**
 * A retry's answer: the admission the journal holds and, for a challenged deny whose record still
 * awaits its evidence, the challenge while it is open (what is still missing, the deadline that
 * holds), so a runtime that lost the first answer, or whose attempt lost the race to an identical
 * one, still learns what to send and by when.
 */
async function replayOf(c: Context<AppEnv>, traceId: string, loaded: { record: { state: JournalState }; history: readonly JournalEntry[] }): Promise<Admitted> {
  const admission = retriedAdmission(loaded.history);
  if (!admission) throw new Error("the journal holds no admission for a decided trace_id");
  const { approval_jcs: _approval, ...answer } = admission;
  const awaiting = loaded.record.state === "awaiting_approval" && answer.receipt.verdict === "deny";
  return { ...answer, replay: true as const, challenge: awaiting ? await pendingChallenge(c, traceId) : null };
}
type JournalPort = ReturnType<AppEnv["Variables"]["services"]["journal"]>["port"];

async function admit(c: Context<AppEnv>, noteTrace: (traceId: string) => void, late: () => boolean): Promise<Admitted> {
  // Checked before each step that lasts: past the deadline the caller is answered INTAKE_TIMEOUT, so nothing more is written.
  const onTime = (): void => {
    if (late()) throw new IntakeTimeout();
  };
  let body: unknown;
  try {
    body = await readStrictJson(c, MAX_INTAKE_BODY);
  } catch (err) {
    if (err instanceof ApiError) throw new IntakeError(err.status === 413 ? "INTAKE_OVERFLOW" : "INTAKE_MALFORMED", err.detail);
    throw err;
  }
  const intake = parseIntake(body);
  noteTrace(intake.command.trace_id);
  const served = [...audiences(c.env)];
  const audience = intake.audience ?? served[0];
  if (!audience || !served.includes(audience)) throw new IntakeError("INTAKE_MALFORMED", "audience is not one this deployment issues for", intake.command.trace_id);
  const services = c.get("services");
  const own = await issuing(c.env);
  // Before anything is written: a receipt signed under a revoked key would only fail ANCHOR_REVOKED.
  if (await ownKeyRevoked(c, own)) throw new SigningKeyRevoked();
  await services.manifests.recordCurrent(services.now());
  const now = services.intake.now ?? services.now;
  const traceId = intake.command.trace_id;
  const deps = admissionDeps(c, own);
  // The parent is verified (read-only: audit mode, no nonce claimed) before anything is written, so a
  // delegation_chain that is not a receipt or an envelope at all is INTAKE_MALFORMED, and a Level 0
  // parent LEVEL0_NOT_ACCEPTED, with no record reserved: the corrected Command under the same trace_id is then a first intake, not a conflict
  // with a Command that was never admitted. The admission judges with this very check.
  const delegation = intake.command.delegation_chain ? await deps.delegation!(intake.command.delegation_chain) : null;
  if (delegation?.kind === "malformed") throw new IntakeError("INTAKE_MALFORMED", delegation.detail, traceId);
  if (delegation?.kind === "level0") throw new IntakeError("LEVEL0_NOT_ACCEPTED", delegation.detail, traceId);
  const journal = services.journal(INTAKE_TENANT).port;
  onTime();
  const reserved = await journal.reserve({
    idempotency_key: traceId,
    action_digest: await intakeDigest(intake, audience),
    at: now(),
    attributes: { trace_id: traceId, agent_id: intake.command.agent_id, tool: intake.command.tool },
  });
  if (reserved.kind === "corrupt") throw new Error(`journal record of ${traceId} refused: ${reserved.reason}`);
  if (reserved.kind === "conflict") throw new IntakeError("INTAKE_TRACE_CONFLICT", "this trace_id was already admitted for another Command; a trace_id names one Command", traceId);
  if (reserved.kind === "created") exportToolExecution(c, "intake", reserved.record);
  const approval = intake.humanApproval ? jcs(intake.humanApproval) : null;
  let expected = reserved.record.revision;
  let fromApproval = false;
  if (reserved.kind === "existing" && reserved.record.state !== "reserved") {
    const loaded = await journal.load(reserved.record.record_id);
    if (loaded.kind !== "found") throw new Error(`journal record of ${traceId}: ${loaded.kind}`);
    const latest = storedAdmission(loaded.history);
    if (!latest) throw new Error("the journal holds no admission for a decided trace_id");
    // Only an escalated record presented with a new approval is judged again; anything else is a
    // retry. A deny that awaits evidence is answered through its challenge alone, which keeps the
    // deadline and the answered-once rule: presenting the evidence here again is a retry of the deny.
    // An approval of another request (or none, or the one already judged) approves nothing here:
    // judging again would only sign the same escalation once more.
    const escalated = loaded.record.state === "awaiting_approval" && latest.receipt.verdict === "escalate";
    const approves = intake.humanApproval !== null && intake.humanApproval.request_hash === latest.receipt.request_hash;
    // CCS §14: a trace admitted under a key since revoked is marked for reconciliation and can never
    // start, so an approval cannot move it on either: judging it again would sign an allow (under the
    // new key) that nothing can act on.
    const marked = escalated && approves && approval !== latest.approval_jcs && (await services.journal(INTAKE_TENANT).markOf(reserved.record.record_id)) !== null;
    if (!escalated || !approves || approval === latest.approval_jcs || marked) return replayOf(c, traceId, loaded);
    expected = loaded.record.revision;
    fromApproval = true;
  }
  // Measured before it is signed: an admission the journal could not hold is refused with no sequence number spent and nothing opened.
  const { admission, decision } = await sizedAdmission(intake, audience, own, delegation ? { ...deps, delegation: async () => delegation } : deps, approval, async () => onTime());
  // The challenge is opened before the record is written to await it: a challenge that could not be
  // opened leaves the trace reserved (a retry judges it again), never a record awaiting evidence no
  // one can send. A challenge whose record was not written is answered CHALLENGE_ANSWERED.
  onTime();
  const challenge = await openChallenge(c, admission);
  onTime();
  const appended = await journal.appendMany({
    record_id: reserved.record.record_id,
    expected_revision: expected,
    at: admission.receipt.issued_at,
    transitions: fromApproval ? [decision] : [{ to: "awaiting_policy", effect: "not-started" }, decision],
  });
  if (appended.kind === "appended") {
    exportToolExecution(c, "intake", appended.record, appended.entries);
    await withdrawIfMarked(c, reserved.record.record_id, admission);
    // Identical intakes sent at once each opened a challenge: the recorded one is put in place, so
    // the deadline this answer announces is the one that holds. The record is written
    // either way, so a store that fails here is logged, not answered: the challenge it holds is
    // then the last attempt's to open, whose deadline is at most that attempt's judging time later.
    if (challenge) {
      try {
        await confirmChallenge(c, admission);
      } catch (err) {
        console.error(JSON.stringify({ event: "challenge_confirm_failed", trace_id: traceId, error: String(err) }));
      }
    }
    return { ...admission, replay: false as const, challenge };
  }
  // Another attempt of the same intake got there first: its admission is the one.
  if (appended.kind === "revision-conflict") return held(c, traceId, journal, reserved.record.record_id);
  throw new Error(`journal refused the admission of ${traceId}: ${appended.kind}`);
}

/**
 * CCS §14: a delegated admission written after a key its delegation rests on was revoked (through a
 * parent this deployment admitted, whose own receipt was presented before the revocation, or racing
 * it) is marked as it is written; its receipt is withdrawn in this deployment's issuer ledger before
 * it is answered, as the revocation withdraws those of the children it marks, so it is refused
 * RECEIPT_WITHDRAWN wherever it is presented. A delegated admission only: one read of its mark.
 */
async function withdrawIfMarked(c: Context<AppEnv>, recordId: string, admission: Admission): Promise<void> {
  if (!admission.delegatedUnder || admission.delegatedUnder.length === 0) return;
  const { journal, anchors, ledgers } = c.get("services");
  const mark = await journal(INTAKE_TENANT).markOf(recordId);
  if (mark?.via !== "delegation") return;
  const r = admission.receipt;
  const anchor = await anchors.fresh(r.issuer);
  if (!anchor) return;
  const retainUntil = r.expires_at + Math.min(r.max_clock_skew ?? DEFAULT_CLOCK_SKEW, freshnessPolicy(c.env).skewCap);
  await ledgers.withdraw(r.issuer, anchor.ledger_shards ?? 1, [{ nonce: r.nonce, retainUntil, revokedAt: mark.revoked_at }]);
}

/**
 * The journal transition an admission decides, carrying its signed receipt. It must fit the
 * journal's MAX_TRANSITION_BYTES, counted as canonical JSON: the runtime context is kept there as a
 * JSON string (each `"` and `\` of its canonical text written twice, a control character as
 * `\u00XX`), beside the approver, the tool (twice in the receipt) and the reasons quoting the
 * params (twice: block_reason and rules), each within its own limit but not all together (a
 * runtime_context of 8,000 backslashes, 16 KiB canonical, answered 500 INTAKE_FAILED with
 * the journal's JournalInputError in the log). One that does not fit is refused INTAKE_OVERFLOW.
 */
function decisionOf(admission: Admission, approval: string | null, admittedUnder: string) {
  const decision = {
    to: decidedState(admission),
    effect: "not-started" as const,
    receipt: admission.receipt,
    // The runtime context is kept as the canonical text its hash covers: it is the caller's, not the journal's.
    detail: {
      runtime_context_jcs: admission.runtime_context ? jcs(admission.runtime_context) : null,
      rules: admission.results,
      approval_jcs: approval,
      admitted_under: admittedUnder,
      ...(admission.delegatedUnder && admission.delegatedUnder.length > 0 ? { delegated_under: admission.delegatedUnder } : {}),
    } satisfies DecisionDetail,
  };
  const size = utf8(jcs({ receipt: decision.receipt, detail: decision.detail, extensions: null })).byteLength;
  if (size > MAX_TRANSITION_BYTES) {
    throw new IntakeError(
      "INTAKE_OVERFLOW",
      `the admission's record would hold ${size} bytes of canonical JSON, past the journal's ${MAX_TRANSITION_BYTES}: the runtime_context (as a JSON string), human_approval, tool and the rules' reasons quoting the params together are too large; no receipt was issued`,
      admission.receipt.trace_id,
    );
  }
  return decision;
}

/** Signs nothing: a MAC and a signature of the real ones' lengths, for sizing a receipt before it is signed (an admission here, a final receipt in execution.ts). */
export const STAND_IN_SIGNER: ReceiptSigner = { kid: "stand-in", mac: async () => new Uint8Array(32), sign: async () => new Uint8Array(64) };

type Decision = ReturnType<typeof decisionOf>;

/**
 * Judges the Command once and measures the journal record its admission decides before a sequence
 * number or a signature is spent on it (an admission past the 32 KiB record was
 * refused INTAKE_OVERFLOW only after it was signed, each refusal skipping a sequence number). The
 * draft is signed with a stand-in signer under the largest sequence number; the receipt then signed
 * is the draft with its sequence (no longer) and signatures (as long) replaced: same judgment, same
 * nonce, same times. `check` runs on the draft, after it was measured and before anything is spent.
 */
export async function sizedAdmission(
  intake: Intake,
  audience: string,
  own: Issuing,
  deps: IssuingDeps,
  approval: string | null,
  check?: (draft: Admission) => Promise<void>,
): Promise<{ admission: Admission; decision: Decision }> {
  const draft = await issueAdmission(intake, audience, own.context, { ...deps, nextSequence: async () => Number.MAX_SAFE_INTEGER, signer: STAND_IN_SIGNER });
  decisionOf(draft, approval, own.identity.fingerprint);
  if (check) await check(draft);
  const { receipt: _legacy, signature: _signature, ...unsigned } = draft.receipt;
  const receipt = await sealReceipt({ ...unsigned, sequence: await deps.nextSequence() }, deps.signer);
  const admission = { ...draft, receipt };
  return { admission, decision: decisionOf(admission, approval, own.identity.fingerprint) };
}

/** Where a challenge's answer is appended: the record that awaits it, at the revision it was checked at. */
export interface AwaitingRecord {
  record_id: string;
  revision: number;
}

/**
 * Whether a challenge's answer can be recorded, judged on its draft before anything is signed: the
 * record must still await evidence, and an answer that still falls short must fit what the journal
 * takes of a repeated state.
 */
export async function awaitingEvidence(c: Context<AppEnv>, traceId: string, draft: Admission): Promise<AwaitingRecord> {
  const journal = c.get("services").journal(INTAKE_TENANT).port;
  const loaded = await journal.loadByIdempotency(traceId);
  if (loaded.kind !== "found") throw new Error(`journal record of ${traceId}: ${loaded.kind}`);
  if (loaded.record.state !== "awaiting_approval") throw new ApiError(409, "CHALLENGE_ANSWERED", "this trace is no longer waiting for evidence");
  // Each answer that falls short is one more awaiting_approval → awaiting_approval entry, and the
  // journal takes a repeated state only up to MAX_REPEATING_HISTORY entries: past it, an answer that
  // still falls short is not recorded (the journal's own refusal would be a 400 naming the port).
  if (decidedState(draft) === "awaiting_approval" && (loaded.history.length >= MAX_REPEATING_HISTORY || historySize(loaded.history) >= MAX_REPEATING_HISTORY_SIZE - MAX_TRANSITION_BYTES)) {
    throw new ApiError(409, "CHALLENGE_ANSWERS_EXHAUSTED", `this trace's record holds ${loaded.history.length} entries, as many (or as large) as it takes of one state repeated: an answer that still falls short is not recorded (no receipt is signed for it); only evidence that completes the challenge is, until its deadline`);
  }
  return { record_id: loaded.record.record_id, revision: loaded.record.revision };
}

/**
 * Records the admission a challenge's evidence earned, on the record that awaited it, in one
 * journal transaction: from then on the trace starts, finalises and is queried as any other.
 */
export async function recordEvidencedAdmission(c: Context<AppEnv>, at: AwaitingRecord, admission: Admission, decision: Decision): Promise<void> {
  const journal = c.get("services").journal(INTAKE_TENANT).port;
  const appended = await journal.appendMany({ record_id: at.record_id, expected_revision: at.revision, at: admission.receipt.issued_at, transitions: [decision] });
  if (appended.kind !== "appended") throw new ApiError(409, "CHALLENGE_ANSWERED", `the journal did not take this answer (${appended.kind}); read the trace again`);
  exportToolExecution(c, "intake", appended.record, appended.entries);
  // A revocation that landed between the answer's mark check and this append marked the record and
  // withdrew only the receipts it held then: this answer's receipt is withdrawn here.
  await withdrawIfMarked(c, at.record_id, admission);
}

async function held(c: Context<AppEnv>, traceId: string, journal: JournalPort, recordId: string): Promise<Admitted> {
  const loaded = await journal.load(recordId);
  if (loaded.kind !== "found") throw new Error("the journal holds no admission for a reserved trace_id");
  return replayOf(c, traceId, loaded);
}

function intakeError(c: Context<AppEnv>, err: unknown, traceId: string | null): Response {
  let code: IntakeErrorCode;
  let detail: string;
  let status: number;
  if (err instanceof IntakeError) {
    code = err.code;
    detail = err.detail;
    traceId = err.traceId ?? traceId;
    status = INTAKE_STATUS[code];
  } else if (err instanceof SigningKeyRevoked) {
    code = "INTAKE_FAILED";
    detail = "this deployment's signing key has been revoked; no receipt was issued (it issues nothing until it is configured with a new key)";
    status = 503;
  } else if (err instanceof IntakeTimeout) {
    code = "INTAKE_TIMEOUT";
    detail = `intake did not complete within ${intakeTimeout(c.env)} ms; no receipt is answered (the same intake may be sent again)`;
    status = INTAKE_STATUS[code];
  } else {
    code = "INTAKE_FAILED";
    detail = "intake failed; no receipt was issued";
    status = err instanceof VerifierUnavailable ? 503 : INTAKE_STATUS[code];
    console.error(JSON.stringify({ event: "intake_failed", request_id: c.get("requestId"), path: loggedPath(c), error: String(err) }));
  }
  const error = { code, retry: INTAKE_RETRY[code], detail: clipText(detail, MAX_DETAIL_CHARS), ...(traceId ? { trace_id: traceId } : {}) };
  return c.json({ error }, status as 400);
}

export const intakeRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
  let traceId: string | null = null;
  try {
    const admission = await deadline(c, (late) => admit(c, (t) => (traceId = t), late), intakeTimeout(c.env));
    // A retry is answered with the admission held; its challenge, if any, was opened the first time
    // and is shown again while it is still open.
    if (admission.replay) return c.json({ ...admissionAnswer({ ...admission, gaps: [] } as unknown as Admission, admission.challenge), idempotent_replay: true });
    return c.json(admissionAnswer(admission, admission.challenge));
  } catch (err) {
    return intakeError(c, err, traceId);
  }
});

/**
 * The execution phase of an admitted receipt (CCS §4.2 phase b), on the receipt journal:
 * `start` claims the execution lease and answers its fence; `finalize` verifies the fence, judges
 * the tool's output (OUT-001..008), computes response_hash and appends the outcome with the signed
 * final receipt; `reconcile` resolves an execution whose lease lapsed without a result (outcome
 * `unknown`) or whose outcome was indeterminate (a lapsed one reaches reconciliation_required
 * through indeterminate, both steps in one append). The same finalisation or reconciliation asked
 * twice answers the receipt already recorded; a stale fence is FENCE_CONFLICT.
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, issuing, leaseSeconds, MAX_VERIFY_BODY } from "../config.js";
import { FinalizeCall, ReconcileCall, StartCall } from "../contract/schemas.js";
import { ApiError, readOptionalStrictJson, readStrictJson, validateBody } from "../http.js";
import { INTAKE_TENANT, markCause } from "../journal-store.js";
import { exportToolExecution } from "../observability.js";
import { snapshotJson } from "../protocol/boundary.js";
import { jcs, prefixedDigest } from "../protocol/digest.js";
import { HEX16 } from "../protocol/encoding.js";
import { finaliseReceipt } from "../protocol/issuing/lifecycle.js";
import type { RuleResult } from "../protocol/issuing/rules/index.js";
import type { ToolOutput } from "../protocol/issuing/rules/types.js";
import { prepareTransition, recordIdOf, redactedExtensions } from "../protocol/journal/core.js";
import { grantedSkew, seconds } from "../protocol/checks/freshness.js";
import { isConsistentEffect, type EffectDisposition, type JournalState } from "../protocol/journal/lifecycle.js";
import type { AppendResult, Corrupt, JournalEntry, JournalRecord, LoadedRecord } from "../protocol/journal/port.js";
import type { Receipt } from "../protocol/receipt.js";
import { delegatedUnderOf, STAND_IN_SIGNER, storedAdmission } from "./intake.js";
import { refuseIfOwnKeyRevoked } from "../own-key.js";

type Outcome = { response: unknown } | { error: unknown } | { outcome: "indeterminate" | "reconciliation_required" };

interface OutcomeCall {
  response?: unknown;
  error?: unknown;
  outcome?: "indeterminate" | "reconciliation_required";
  effect?: EffectDisposition;
  content_type?: string;
  /** The outcome_status the output reports (OUT-007 judges it). */
  outcome_status?: string;
  declared?: ToolOutput["declared"];
  extensions?: Record<string, unknown>;
  /** Why a reconciliation resolved the outcome as it did (an operator's account): kept in the entry, credentials redacted. */
  reason?: string;
}

const traceOf = (c: Context<AppEnv>): string => {
  const traceId = c.req.param("trace_id") ?? "";
  if (!HEX16.test(traceId)) throw new ApiError(400, "MALFORMED_REQUEST", "trace_id must be 16 lowercase hex");
  return traceId;
};

const journalOf = (c: Context<AppEnv>) => c.get("services").journal(INTAKE_TENANT).port;

function corrupt(result: Corrupt): never {
  console.error(JSON.stringify({ event: "journal_history_invalid", record_id: result.record_id, reason: result.reason }));
  throw new ApiError(500, "JOURNAL_HISTORY_INVALID", "the journal history of this record does not add up and was refused; nothing was changed");
}

async function loadTrace(c: Context<AppEnv>, traceId: string): Promise<LoadedRecord> {
  const loaded = await journalOf(c).load(recordIdOf(traceId));
  if (loaded.kind === "not-found") throw new ApiError(404, "NOT_FOUND", `no admission for trace ${traceId}`);
  if (loaded.kind === "corrupt") corrupt(loaded);
  return loaded;
}

/**
 * An admission past its window (`expires_at` plus the skew a verifier grants it) is evidence no
 * relying party accepts any more, so nothing starts on it: the record is closed as `expired` (the
 * lifecycle's ready → expired edge) and the start refused. The same Command needs a new trace_id.
 */
async function refuseExpired(c: Context<AppEnv>, record: JournalRecord, history: readonly JournalEntry[], now: number): Promise<void> {
  const receipt = storedAdmission(history)?.receipt;
  if (!receipt) return;
  const until = receipt.expires_at + grantedSkew(receipt, freshnessPolicy(c.env));
  if (now <= until) return;
  const appended = await journalOf(c).append({ record_id: record.record_id, expected_revision: record.revision, at: now, to: "expired", effect: "not-started", detail: { admission_expired_at: receipt.expires_at } });
  if (appended.kind === "corrupt") corrupt(appended);
  if (appended.kind === "appended") exportToolExecution(c, "intake", appended.record, appended.entries);
  throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `the admission expired at ${receipt.expires_at} (${seconds(now - until)}s past its window with skew): nothing starts on it; admit the Command again under a new trace_id`);
}

/**
 * A final receipt carries its admission's bindings, config_hash included, so it is signed only under
 * the configuration the admission was issued under (`finaliseReceipt` refuses any other). Once the
 * deployment issues under another one (its rules, policy, manifest or signing key changed: a deploy,
 * a re-key), an admission of the old one can have no signed outcome: it is not started, and an
 * execution started before the change records its outcome unsigned (`outcome: "indeterminate"`,
 * then a reconciliation) instead of failing as an internal error on every attempt.
 */
function refuseOtherConfiguration(admission: Receipt, configHash: string, what: string): void {
  if (admission.config_hash === configHash) return;
  throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `the admission was issued under configuration ${admission.config_hash} and this deployment now issues under ${configHash}: ${what}`);
}

/** The signed admission receipt of an allow, which is what an execution starts from. */
function admissionOf(history: readonly JournalEntry[]): Receipt {
  const admission = storedAdmission(history);
  if (!admission) throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", "this trace has no admission yet");
  return admission.receipt;
}

/**
 * The digest that tells a retry of an outcome call from another call, kept in the entry's
 * `outcome_call`. It is taken over the call as the entry records it, its `extensions` and `reason`
 * with credentials redacted: a digest of the call as sent would keep a redacted credential in a
 * form anyone who reads the evidence can test guesses against (`"password": "hunter2"` stored as
 * `"[redacted]"` beside the SHA-256 of the call that held it). Calls that differ only in what
 * redaction removes are the same call.
 */
async function callDigest(call: OutcomeCall): Promise<string> {
  const extensions = call.extensions === undefined ? {} : { extensions: redactedExtensions(call.extensions) ?? call.extensions };
  const reason = call.reason === undefined ? {} : { reason: snapshotJson(call.reason, { credentials: "redact" }) };
  return prefixedDigest(jcs({ ...call, ...extensions, ...reason }));
}

/** The step that recorded an outcome (by `finalize` or `reconcile`), with the digest of the call that asked for it. */
function recordedOutcome(history: readonly JournalEntry[], via: "finalize" | "reconcile") {
  for (let i = history.length - 1; i >= 0; i--) {
    const d = history[i].detail as { outcome_call?: { via: string; digest: string; fence: number | null }; rules?: RuleResult[] } | null;
    if (d?.outcome_call?.via === via) return { entry: history[i], call: d.outcome_call, rules: d.rules ?? [] };
  }
  return null;
}

function answer(c: Context<AppEnv>, traceId: string, record: JournalRecord, receipt: unknown, rules: RuleResult[], replay: boolean) {
  return c.json({ trace_id: traceId, record_id: record.record_id, state: record.state, effect: record.effect, outcome_status: record.outcome_status, receipt: receipt ?? null, rules, ...(replay ? { idempotent_replay: true as const } : {}) });
}

const DEFAULT_EFFECT: Record<"response" | "error", EffectDisposition> = { response: "applied", error: "unknown" };

/**
 * Records an outcome: judges the output and signs the final receipt when there is a response or
 * an error to bind, then appends the step under `fence` (null: no lease is held, a
 * reconciliation). The answer is the recorded state and receipt.
 */
async function recordOutcome(c: Context<AppEnv>, traceId: string, loaded: LoadedRecord, call: OutcomeCall, outcome: Outcome, fence: number | null, via: "finalize" | "reconcile") {
  const { record, history } = loaded;
  const digest = await callDigest(call);
  let to: JournalState;
  let effect: EffectDisposition;
  let receipt: Receipt | null = null;
  let rules: RuleResult[] = [];
  // The reason is evidence of the reconciliation itself, so the entry keeps it (its credential-shaped parts redacted, as in extensions).
  const reason = call.reason === undefined ? {} : { reason: snapshotJson(call.reason, { credentials: "redact" }) as string };
  if ("outcome" in outcome) {
    to = outcome.outcome;
    effect = call.effect ?? "unknown";
  } else {
    const kind = "response" in outcome ? "response" : "error";
    to = kind === "response" ? "succeeded" : "failed_after_start";
    effect = call.effect ?? DEFAULT_EFFECT[kind];
    // Nor are they spent on an outcome the journal would refuse to record (the append judges it again).
    if (!isConsistentEffect(to, effect)) throw new ApiError(409, "ILLEGAL_TRANSITION", `${to} cannot carry the effect ${effect}`);
    // Nor on a step whose own parts the journal refuses: extensions out of form, or extensions and
    // reason already past MAX_TRANSITION_BYTES. Judged as the append judges it, with the admission
    // standing in for the final receipt (which only outgrows it) and no rules' results yet: a step
    // refused here would be refused there, after a sequence number and a signature were spent.
    prepareTransition({ to, effect, receipt: admissionOf(history), detail: { outcome_call: { via, digest, fence }, rules: [], ...reason }, extensions: call.extensions });
    const services = c.get("services");
    const own = await issuing(c.env);
    const { identity, signer, context } = own;
    const admission = admissionOf(history);
    refuseOtherConfiguration(admission, context.configHash, "its final receipt cannot be signed; record the outcome without one (finalize with outcome \"indeterminate\", or reconcile it as indeterminate or reconciliation_required)");
    // The fence must still hold the lease before a sequence number and a signature are spent on it.
    if (fence !== null) {
      const check = await journalOf(c).verifyFence({ record_id: record.record_id, fence, at: c.get("services").now() });
      if (check.kind === "corrupt") corrupt(check);
      if (check.kind !== "valid") throw new ApiError(409, "FENCE_CONFLICT", "this fence no longer holds the execution lease");
    }
    // A final receipt signed under a revoked key would only fail ANCHOR_REVOKED: nothing is recorded.
    await refuseIfOwnKeyRevoked(c, own);
    const overrides = services.intake;
    const content = "response" in outcome ? outcome.response : outcome.error;
    const output = { content, content_type: call.content_type, outcome_status: call.outcome_status, declared: call.declared };
    // The clock is read once, for the draft and the receipt signed alike: read twice, the draft
    // could fall on a whole second (issued_at 1796100298, four time fields printed without
    // decimals) and the receipt on 1796100298.123, 16 bytes longer than the step sized, which the
    // journal then refused after a sequence number and a signature were spent.
    const issuedAt = (overrides.now ?? services.now)();
    const finalising = {
      now: () => issuedAt,
      randomBytes: (n: number) => crypto.getRandomValues(new Uint8Array(n)),
      issuerKeys: async (issuer: string) => (await services.anchors.pinned(issuer))?.keys ?? null,
      verifier: services.verifier,
    };
    // The final receipt outgrows the admission (response_hash, rule_summary, block_reason) and the
    // step carries the output rules' results, so the check above can pass a step the journal then
    // refuses, after a sequence number and a signature were spent (extensions of
    // 30,839 characters were refused 400 after signing, twice, skipping two sequence numbers). So
    // the step is judged once more as it will be, with a stand-in signature of the same length, the
    // largest sequence number and the same issue time, before anything is spent: the receipt then
    // signed differs from the draft only in its sequence (no longer) and signatures (as long).
    const draft = await finaliseReceipt(admission, output, context, { ...finalising, nextSequence: async () => Number.MAX_SAFE_INTEGER, signer: STAND_IN_SIGNER });
    prepareTransition({ to, effect, receipt: draft.receipt, detail: { outcome_call: { via, digest, fence }, rules: draft.results, ...reason }, extensions: call.extensions });
    const finalised = await finaliseReceipt(admission, output, context, {
      ...finalising,
      // The draft's results are the ones sized: the rules are judged once.
      judged: draft.results,
      nextSequence: overrides.nextSequence ?? (() => services.sequences.next(identity.fingerprint)),
      signer: overrides.signer ?? signer,
    });
    receipt = finalised.receipt;
    rules = finalised.results;
  }
  const step = { effect, detail: { outcome_call: { via, digest, fence }, rules, ...reason }, extensions: call.extensions };
  // The lifecycle has no started → reconciliation_required edge: a lapsed execution gets there through
  // indeterminate, both steps in one append, so nothing sees it half-way.
  const steps = to === "reconciliation_required" && record.state === "started"
    ? [{ ...step, to: "indeterminate" as const }, { ...step, to }]
    : [{ ...step, to, receipt: receipt ?? undefined }];
  const result: AppendResult | Corrupt = await journalOf(c).appendMany({
    record_id: record.record_id,
    expected_revision: record.revision,
    at: c.get("services").now(),
    ...(fence !== null ? { fence } : {}),
    transitions: steps,
  });
  switch (result.kind) {
    case "appended":
      exportToolExecution(c, "intake", result.record, result.entries);
      return answer(c, traceId, result.record, receipt, rules, false);
    case "revision-conflict": {
      // Raced by the same call (answer what it recorded) or by something else (a lapse, another outcome).
      const again = await loadTrace(c, traceId);
      const done = recordedOutcome(again.history, via);
      if (done && done.call.digest === digest && done.call.fence === fence) return answer(c, traceId, again.record, done.entry.receipt, done.rules, true);
      throw new ApiError(409, "JOURNAL_REVISION_CONFLICT", "the record changed while the outcome was being recorded; load it and decide again");
    }
    case "fence-conflict":
      throw new ApiError(409, "FENCE_CONFLICT", "this fence no longer holds the execution lease");
    case "illegal-transition":
      throw new ApiError(409, "ILLEGAL_TRANSITION", result.reason);
    case "not-found":
      throw new ApiError(404, "NOT_FOUND", `no admission for trace ${traceId}`);
    case "corrupt":
      return corrupt(result);
  }
}

const outcomeOf = (call: OutcomeCall): Outcome =>
  Object.hasOwn(call, "response") ? { response: call.response } : Object.hasOwn(call, "error") ? { error: call.error } : { outcome: call.outcome! };

export const executionRoutes = new Hono<AppEnv>()
  .post("/:trace_id/start", async (c) => {
  const traceId = traceOf(c);
  // Every member is optional, so no body at all is `{}`.
  const body = validateBody(StartCall, await readOptionalStrictJson(c, MAX_VERIFY_BODY));
  const { record, history } = await loadTrace(c, traceId);
  const now = c.get("services").now();
  // An admission past its window is closed expired first, marked or not: a revocation's mark must
  // not keep a record that can never start `ready` for good.
  if (record.state === "ready") await refuseExpired(c, record, history, now);
  // CCS §14: an admission signed under a key since revoked is no longer evidence to start on.
  const mark = await c.get("services").journal(INTAKE_TENANT).markOf(record.record_id);
  if (mark) throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `this admission ${markCause(mark, delegatedUnderOf(history))}: it is marked for reconciliation and cannot be started`);
  if (record.state === "ready") {
    // Nothing is written: the admission stays as it was issued, and the same Command is admitted again under a new trace_id.
    refuseOtherConfiguration(admissionOf(history), (await issuing(c.env)).context.configHash, "its outcome could never be signed, so it is not started; admit the Command again under a new trace_id");
  }
  const claimed = await journalOf(c).claim({ record_id: record.record_id, expected_revision: record.revision, at: now, lease_seconds: body.lease_seconds ?? leaseSeconds(c.env) });
  switch (claimed.kind) {
    case "claimed":
      exportToolExecution(c, "intake", claimed.record);
      return c.json({ trace_id: traceId, record_id: record.record_id, fence: claimed.fence, lease_until: claimed.lease_until, state: "started", receipt: admissionOf(history) });
    case "held":
      throw new ApiError(409, "EXECUTION_HELD", `the execution is already started under a lease until ${claimed.lease_until}`);
    case "revision-conflict":
      throw new ApiError(409, "EXECUTION_HELD", "the record changed while it was being claimed; another start won");
    case "not-eligible": {
      // Marked by a revocation that landed after the look above: the journal refused the claim itself.
      const late = claimed.lease_lapsed ? null : await c.get("services").journal(INTAKE_TENANT).markOf(record.record_id);
      if (late) throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `this admission ${markCause(late, delegatedUnderOf(history))}: it is marked for reconciliation and cannot be started`);
      throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", claimed.lease_lapsed ? "the execution's lease lapsed without a result: reconcile it" : `a record in state ${claimed.state} cannot be started`);
    }
    case "not-found":
      throw new ApiError(404, "NOT_FOUND", `no admission for trace ${traceId}`);
    case "corrupt":
      return corrupt(claimed);
  }
})
  .post("/:trace_id/finalize", async (c) => {
  const traceId = traceOf(c);
  const call = validateBody(FinalizeCall, await readStrictJson(c, MAX_VERIFY_BODY)) as OutcomeCall & { fence: number };
  const loaded = await loadTrace(c, traceId);
  const done = recordedOutcome(loaded.history, "finalize");
  if (done) {
    if (done.call.fence !== call.fence) throw new ApiError(409, "FENCE_CONFLICT", "this fence does not hold the execution; it was finalised under another");
    if (done.call.digest !== (await callDigest(call))) throw new ApiError(409, "ALREADY_FINALISED", `finalised already with another outcome (${done.entry.to})`);
    return answer(c, traceId, loaded.record, done.entry.receipt, done.rules, true);
  }
  const { record } = loaded;
  if (record.lease?.fence !== call.fence) {
    if (record.state === "started" || record.fence > 0) throw new ApiError(409, "FENCE_CONFLICT", record.lease_lapsed ? "the lease of this fence lapsed: the outcome is unknown until reconciled" : "this fence does not hold the execution lease");
    throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `a record in state ${record.state} has no execution to finalise`);
  }
  return recordOutcome(c, traceId, loaded, call, outcomeOf(call), call.fence, "finalize");
})
  .post("/:trace_id/reconcile", async (c) => {
  const traceId = traceOf(c);
  const call = validateBody(ReconcileCall, await readStrictJson(c, MAX_VERIFY_BODY)) as OutcomeCall;
  const loaded = await loadTrace(c, traceId);
  const done = recordedOutcome(loaded.history, "reconcile");
  if (done && done.call.digest === (await callDigest(call)) && done.entry.revision === loaded.record.revision) return answer(c, traceId, loaded.record, done.entry.receipt, done.rules, true);
  const { record } = loaded;
  // A lease ends at lease_until, not when the alarm (which may run late) writes its lapse: past it the
  // execution is as lapsed as a lapsed one, and the append that records the outcome writes the lapse first.
  const ended = record.state === "started" && record.lease !== null && c.get("services").now() >= record.lease.until;
  const open = (record.state === "started" && (record.lease_lapsed || ended)) || record.state === "indeterminate";
  if (!open) {
    if (record.state === "started") throw new ApiError(409, "EXECUTION_HELD", "the execution still holds its lease: finalise it with its fence");
    throw new ApiError(409, "EXECUTION_NOT_ELIGIBLE", `a record in state ${record.state} has nothing to reconcile`);
  }
  return recordOutcome(c, traceId, loaded, call, outcomeOf(call), null, "reconcile");
});

/**
 * The one-way observability projection of a tool execution event. A ToolExecutionEvent is a
 * projection of the durable execution record; this projects it once more onto a fixed, safe set
 * of attributes for an external log or trace. The set is an allowlist of facts, each copied only
 * when it has its expected form: native extensions, evidence references, action digests,
 * idempotency keys, provider request metadata and credentials are never read, so they can never
 * appear. The projection acknowledges, gates and replays nothing; the event and its receipt stay
 * the source of truth.
 */

/** Receipt states of the controlled tool-execution lifecycle. */
export const EXECUTION_STATES = [
  "reserved", "awaiting_policy", "awaiting_approval", "ready", "started", "succeeded", "failed_after_start",
  "indeterminate", "reconciliation_required", "denied", "expired", "cancelled_before_start",
  "compensation_required", "compensating", "compensated", "compensation_failed",
] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

export const EFFECT_DISPOSITIONS = ["not-started", "none", "applied", "partial", "unknown", "compensated"] as const;
export type EffectDisposition = (typeof EFFECT_DISPOSITIONS)[number];

/**
 * Whose journal recorded the step: this deployment's own (intake, start, finalise, reconcile, a
 * challenge) or a relying party's, driven through `/v1/journal`. A record's id is derived from its
 * idempotency key alone, so without it a party reserving an intake's trace_id as its key would
 * export events with the very ids and trace_id of the deployment's own.
 */
export const EXECUTION_JOURNALS = ["intake", "relying_party"] as const;
export type ExecutionJournal = (typeof EXECUTION_JOURNALS)[number];

/**
 * A tool execution event as the journal emits it. Only the first group is ever projected; the
 * rest is named so that the projection's refusal to read it is visible in the type.
 */
export interface ToolExecutionEvent {
  event_id: string;
  tool: string;
  state: ExecutionState;
  effect?: EffectDisposition;
  /** Unix seconds. */
  occurred_at: number;
  trace_id?: string;
  journal?: ExecutionJournal;
  idempotency_key?: string;
  action_digest?: string;
  evidence_refs?: unknown[];
  extensions?: Record<string, unknown>;
  provider?: Record<string, unknown>;
  [other: string]: unknown;
}

/** One step of a journal record, as a tool execution event is made of it. */
export interface JournalStep {
  revision: number;
  to: ExecutionState;
  effect: EffectDisposition;
  /** Unix seconds. */
  at: number;
}

/**
 * The tool execution event of one step the journal recorded: `event_id` is the record's id and the
 * step's revision, the tool and trace_id are what the record's reservation named (`attributes`),
 * the state and effect the step's. Attributes are handed over as they are; the projection reads
 * only those it may carry, in their expected forms.
 */
export function toolExecutionEvent(record: { record_id: string; attributes: Record<string, unknown> }, step: JournalStep, journal: ExecutionJournal): ToolExecutionEvent {
  const named = (key: string): unknown => (record.attributes !== null && typeof record.attributes === "object" ? own(record.attributes, key) : undefined);
  return {
    event_id: `${record.record_id}:${step.revision}`,
    tool: named("tool") as string,
    state: step.to,
    effect: step.effect,
    occurred_at: step.at,
    trace_id: named("trace_id") as string | undefined,
    journal,
  };
}

/** The attributes a tool execution projection may carry: these names, these value forms, nothing else. */
export interface ToolExecutionAttributes {
  "event.name": "tool_execution";
  "event.id"?: string;
  "tool.name"?: string;
  "tool.execution.state"?: ExecutionState;
  "tool.execution.effect"?: EffectDisposition;
  "tool.execution.journal"?: ExecutionJournal;
  "trace_id"?: string;
  "time"?: number;
}

/**
 * The attributes of a stored usage receipt's projection: its attribution and pricing kinds and the
 * provider it ran on. Token counts, the invocation and provider request ids and the model stay in
 * the evidence store.
 */
export interface ModelUsageAttributes {
  "event.name": "model_usage";
  "model.provider": string;
  "usage.attribution": "attributed" | "partial" | "unavailable";
  "usage.pricing": "unavailable" | "price-source";
  "time": number;
}

export type ProjectedAttributes = ToolExecutionAttributes | ModelUsageAttributes;

export const PROJECTED_ATTRIBUTES = [
  "event.name", "event.id", "tool.name", "tool.execution.state", "tool.execution.effect", "tool.execution.journal", "trace_id", "time",
  "model.provider", "usage.attribution", "usage.pricing",
] as const;

/** The projection of a usage receipt as it was stored (its fields already validated by the factory). */
export function projectModelUsage(receipt: { model: { provider: string }; attribution: { kind: ModelUsageAttributes["usage.attribution"] }; pricing: { kind: ModelUsageAttributes["usage.pricing"] }; observed_at: number }): ModelUsageAttributes {
  return {
    "event.name": "model_usage",
    "model.provider": receipt.model.provider,
    "usage.attribution": receipt.attribution.kind,
    "usage.pricing": receipt.pricing.kind,
    "time": receipt.observed_at,
  };
}

/** What the projection declares about itself. */
export const PROJECTION_POLICY = {
  /** Every event is projected; none is sampled out. */
  sampling: "all",
  /** An allowlist of attributes, each copied only in its expected form. */
  redaction: "allowlist",
  /** Scheduled once after the answer; a failure is dropped, never retried. */
  delivery: "best-effort-once",
  /** Whatever the log or trace backend keeps; the projection keeps nothing. */
  retention: "exporter",
} as const;

const EVENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TOOL_NAME = /^[A-Za-z0-9._:/-]{1,256}$/;
const TRACE_ID = /^([0-9a-f]{16}|[0-9a-f]{32})$/;

const own = (event: object, key: string): unknown => {
  const d = Object.getOwnPropertyDescriptor(event, key);
  return d && "value" in d ? d.value : undefined;
};

/** The safe attributes of `event`; a fact not in its expected form is left out, never copied raw. */
export function projectToolExecutionEvent(event: ToolExecutionEvent): ToolExecutionAttributes {
  const out: ToolExecutionAttributes = { "event.name": "tool_execution" };
  if (event === null || typeof event !== "object") return out;
  const id = own(event, "event_id");
  const tool = own(event, "tool");
  const state = own(event, "state");
  const effect = own(event, "effect");
  const trace = own(event, "trace_id");
  const at = own(event, "occurred_at");
  const journal = own(event, "journal");
  if (typeof id === "string" && EVENT_ID.test(id)) out["event.id"] = id;
  if (typeof tool === "string" && TOOL_NAME.test(tool)) out["tool.name"] = tool;
  if ((EXECUTION_STATES as readonly unknown[]).includes(state)) out["tool.execution.state"] = state as ExecutionState;
  if ((EFFECT_DISPOSITIONS as readonly unknown[]).includes(effect)) out["tool.execution.effect"] = effect as EffectDisposition;
  if ((EXECUTION_JOURNALS as readonly unknown[]).includes(journal)) out["tool.execution.journal"] = journal as ExecutionJournal;
  if (typeof trace === "string" && TRACE_ID.test(trace)) out.trace_id = trace;
  if (typeof at === "number" && Number.isFinite(at) && at >= 0) out.time = at;
  return out;
}

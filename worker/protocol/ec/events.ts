/**
 * The event trace of an agent run: a closed schema, its canonical form and its digest.
 */
import { SHA256_REF } from "../encoding.js";
import { DOMAINS, domainDigest } from "./canonical.js";
import { ACCESS_STATES, type Access } from "./corpus.js";

/** countersign's schema version for events and receipts (the paper's own is not published). */
export const EC_SCHEMA_VERSION = "ec-agent/2";

export const ACTION_TYPES = [
  "retrieval",
  "observation",
  "empty_observation",
  "tool_call",
  "tool_error",
  "retry",
  "access_denied",
  "claim_emission",
  "answer",
  "stop",
] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/**
 * Every event has exactly these fields; null where one does not apply. `index` is not a field:
 * the canonical form inserts it from the event's position. An observation of a document
 * (retrieval, observation, access_denied) records the version it saw (`doc_version`, the
 * document's content hash) and the access decision it got (`access`).
 */
export const EVENT_FIELDS = ["action_id", "action_type", "tool", "input", "output", "doc_id", "doc_version", "access", "claim_id", "attempt"] as const;

/** The declared type of each field: what the canonical trace accepts there. */
const FIELD_TYPES: Record<(typeof EVENT_FIELDS)[number], "string" | "string?" | "integer?"> = {
  action_id: "string",
  action_type: "string",
  tool: "string?",
  input: "string?",
  output: "string?",
  doc_id: "string?",
  doc_version: "string?",
  access: "string?",
  claim_id: "string?",
  attempt: "integer?",
};

/** Action types that observe a document and so may carry doc_version and access. */
export const OBSERVING_TYPES: readonly string[] = ["retrieval", "observation", "access_denied"];

export interface TraceEvent {
  action_id: string;
  action_type: ActionType;
  tool: string | null;
  input: string | null;
  output: string | null;
  doc_id: string | null;
  doc_version: string | null;
  access: Access | null;
  claim_id: string | null;
  attempt: number | null;
}

export type EventReason = "EVENT_SCHEMA_INVALID" | "EVENT_ACTION_TYPE_INVALID" | "EVENT_DUPLICATE_ACTION_ID";

export interface EventProblem {
  reason: EventReason;
  index: number;
  detail: string;
}

const FIELD_SET = new Set<string>(EVENT_FIELDS);
const TYPE_SET = new Set<string>(ACTION_TYPES);
const ofType = (v: unknown, t: string) => (t.endsWith("?") && v === null) || (t.startsWith("string") ? typeof v === "string" : Number.isSafeInteger(v));

/** Every problem of a trace against the closed schema; empty when it is canonical. */
export function traceProblems(events: unknown): EventProblem[] {
  if (!Array.isArray(events)) return [{ reason: "EVENT_SCHEMA_INVALID", index: -1, detail: "events must be an array" }];
  const problems: EventProblem[] = [];
  const ids = new Set<string>();
  events.forEach((e, index) => {
    const bad = (reason: EventReason, detail: string) => problems.push({ reason, index, detail });
    if (e === null || typeof e !== "object" || Array.isArray(e)) return bad("EVENT_SCHEMA_INVALID", "an event must be an object");
    const ev = e as Record<string, unknown>;
    for (const key of Object.keys(ev)) if (!FIELD_SET.has(key)) bad("EVENT_SCHEMA_INVALID", `undeclared field ${JSON.stringify(key)}`);
    for (const key of EVENT_FIELDS) if (!Object.hasOwn(ev, key)) bad("EVENT_SCHEMA_INVALID", `missing field ${key}`);
    for (const key of EVENT_FIELDS) {
      const t = FIELD_TYPES[key];
      if (Object.hasOwn(ev, key) && !ofType(ev[key], t)) bad("EVENT_SCHEMA_INVALID", `${key} must be ${t === "string" ? "a string" : t === "string?" ? "a string or null" : "an integer or null"}`);
    }
    if (typeof ev.doc_version === "string" && !SHA256_REF.test(ev.doc_version)) bad("EVENT_SCHEMA_INVALID", "doc_version must be a content hash, \"sha256:\" + 64 lowercase hex");
    if (typeof ev.access === "string" && !ACCESS_STATES.includes(ev.access as Access)) bad("EVENT_SCHEMA_INVALID", `access must be one of ${ACCESS_STATES.join(", ")}`);
    if ((typeof ev.doc_version === "string" || typeof ev.access === "string") && !OBSERVING_TYPES.includes(ev.action_type as string)) {
      bad("EVENT_SCHEMA_INVALID", `only ${OBSERVING_TYPES.join(", ")} events record doc_version and access`);
    }
    // A denial that records a grant contradicts itself, and would let a reference recording
    // "granted" pass the observation check right after the run was denied the document.
    if (ev.action_type === "access_denied" && ev.access === "granted") bad("EVENT_SCHEMA_INVALID", "an access_denied event records a denial: its access is revoked or unauthorized, never granted");
    if (typeof ev.action_id !== "string" || ev.action_id === "") bad("EVENT_SCHEMA_INVALID", "action_id must be a non-empty string");
    else if (ids.has(ev.action_id)) bad("EVENT_DUPLICATE_ACTION_ID", `action_id ${JSON.stringify(ev.action_id)} appears twice`);
    else ids.add(ev.action_id);
    if (!TYPE_SET.has(ev.action_type as string)) bad("EVENT_ACTION_TYPE_INVALID", `action_type ${JSON.stringify(ev.action_type)} is not one of ${ACTION_TYPES.join(", ")}`);
  });
  return problems;
}

/** The canonical events: only the declared fields, each event with `index` from its position. */
export const indexedEvents = (events: TraceEvent[]) =>
  events.map((e, index) => ({ ...Object.fromEntries(EVENT_FIELDS.map((k) => [k, e[k]])), index }));

/** SHA-256 over the trace domain separator and the canonical `{domain, events, schema_version}`. */
export function traceDigest(events: TraceEvent[]): Promise<string> {
  return domainDigest(DOMAINS.trace, { domain: DOMAINS.trace, events: indexedEvents(events), schema_version: EC_SCHEMA_VERSION });
}

/** The index of the first answer event, or -1. */
export const answerIndex = (events: TraceEvent[]): number => events.findIndex((e) => e.action_type === "answer");

/** The execution digest: the trace digest of the prefix through the (first) answer event. */
export function executionDigest(events: TraceEvent[]): Promise<string> | null {
  const end = answerIndex(events);
  return end < 0 ? null : traceDigest(events.slice(0, end + 1));
}

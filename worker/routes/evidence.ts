/**
 * The local evidence store (CCS §11.1) over the intake journal: append-only, indexed by trace_id,
 * queryable by agent, tool, verdict, state and time range. `GET /v1/evidence/{trace_id}` answers a
 * record as its ordered history derives it, with that history and every receipt issued for it;
 * `GET /v1/evidence?…` pages through record summaries in (created_at, record_id) order with an
 * opaque cursor. Reads write nothing.
 */
import { Hono } from "hono";
import type { AppEnv } from "../app.js";
import { ApiError, strictQuery } from "../http.js";
import { INTAKE_TENANT } from "../journal-store.js";
import { fromBase64Url, HEX16, toBase64Url, utf8 } from "../protocol/encoding.js";
import { recordIdOf, RECORD_ID } from "../protocol/journal/core.js";
import { isJournalState } from "../protocol/journal/lifecycle.js";
import { receiptsOf } from "../protocol/journal/port.js";
import { isJsonObject, parseStrictJsonBytes } from "../protocol/strict-json.js";

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;
const QUERY_PARAMS = new Set(["agent_id", "tool", "verdict", "state", "from", "to", "cursor", "limit"]);

const bad = (detail: string): never => {
  throw new ApiError(400, "MALFORMED_REQUEST", detail);
};

export const encodeCursor = (after: { created_at: number; record_id: string }): string => toBase64Url(utf8(JSON.stringify([after.created_at, after.record_id])));

function decodeCursor(text: string): { created_at: number; record_id: string } {
  const bytes = fromBase64Url(text);
  let value: unknown = null;
  try {
    value = bytes && bytes.length <= 128 ? parseStrictJsonBytes(bytes) : null;
  } catch {
    value = null;
  }
  if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== "number" || typeof value[1] !== "string" || !RECORD_ID.test(value[1])) return bad("cursor is not a position of this route's next_cursor form");
  return { created_at: value[0], record_id: value[1] };
}

/** Unix seconds in decimal, as limit: Number() would also take "0x10" (16), "0b1", "1e3", " 5" and "Infinity"-like spellings. */
const SECONDS = /^[0-9]{1,15}(\.[0-9]{1,6})?$/;
const seconds = (text: string | undefined, name: string): number | undefined => {
  if (text === undefined) return undefined;
  return SECONDS.test(text) ? Number(text) : bad(`${name} must be Unix seconds in decimal (at most 15 digits, and 6 after a point)`);
};

export const evidenceRoutes = new Hono<AppEnv>()
  .get("/", async (c) => {
  const q = strictQuery(c, QUERY_PARAMS);
  for (const [name, max] of [["agent_id", 512], ["tool", 256]] as const) if (q[name] !== undefined && (q[name] === "" || q[name].length > max)) bad(`${name} must be 1-${max} characters`);
  if (q.verdict !== undefined && !["allow", "deny", "escalate"].includes(q.verdict)) bad("verdict must be allow, deny or escalate");
  if (q.state !== undefined && !isJournalState(q.state)) bad("state must be a journal state");
  // Decimal digits only: Number() would also take "1e2", "0x10" and " 1".
  const limit = q.limit === undefined ? DEFAULT_PAGE : /^[0-9]{1,4}$/.test(q.limit) ? Number(q.limit) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) bad(`limit must be an integer from 1 to ${MAX_PAGE}`);
  const page = await c.get("services").journal(INTAKE_TENANT).query({
    agent_id: q.agent_id,
    tool: q.tool,
    verdict: q.verdict,
    state: q.state,
    from: seconds(q.from, "from"),
    to: seconds(q.to, "to"),
    after: q.cursor === undefined ? undefined : decodeCursor(q.cursor),
    limit,
  });
  return c.json({ records: page.records, next_cursor: page.next ? encodeCursor(page.next) : null });
})
  .get("/:trace_id", async (c) => {
  const traceId = c.req.param("trace_id");
  if (!HEX16.test(traceId)) bad("trace_id must be 16 lowercase hex");
  const journal = c.get("services").journal(INTAKE_TENANT);
  const [loaded, reconciliation] = await Promise.all([journal.port.load(recordIdOf(traceId)), journal.markOf(recordIdOf(traceId))]);
  if (loaded.kind === "not-found") throw new ApiError(404, "NOT_FOUND", `no evidence for trace ${traceId}`);
  if (loaded.kind === "corrupt") {
    console.error(JSON.stringify({ event: "journal_history_invalid", record_id: loaded.record_id, reason: loaded.reason }));
    throw new ApiError(500, "JOURNAL_HISTORY_INVALID", "the journal history of this record does not add up and was refused");
  }
  return c.json({ record: loaded.record, history: loaded.history, receipts: receiptsOf(loaded.history), reconciliation });
});

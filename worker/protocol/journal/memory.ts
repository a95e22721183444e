/**
 * The in-memory adapter of the journal port (synchronous, so it is a ToolReceiptJournal as it
 * stands), for tests and the CLI: the same rules as the
 * Durable Object adapter, over Maps. Nothing is durable; a process is one world. Leases lapse
 * when `lapseDue` is called with a clock past their deadline (on the journal's own clock, in ms).
 */
import { journalCore, type JournalCore, type JournalRow, type JournalStorage } from "./core.js";
import type { JournalEntry, JournalQuery, RecordSummary } from "./port.js";

export function memoryJournalStorage(): JournalStorage & { rows: Map<string, JournalRow>; entries: Map<string, JournalEntry[]> } {
  const rows = new Map<string, JournalRow>();
  const entries = new Map<string, JournalEntry[]>();
  return {
    rows,
    entries,
    row: (id) => rows.get(id) ?? null,
    history: (id) => [...(entries.get(id) ?? [])],
    entriesAt: (id, revisions) => (entries.get(id) ?? []).filter((e) => revisions.includes(e.revision)),
    write(row, added) {
      rows.set(row.record_id, row);
      entries.set(row.record_id, [...(entries.get(row.record_id) ?? []), ...added]);
    },
    due: (nowMs) => [...rows.values()].filter((r) => r.lease_deadline_ms !== null && r.lease_deadline_ms <= nowMs).map((r) => r.record_id),
  };
}

/** A journal in memory; lease deadlines are kept on the caller's clock (seconds × 1000). */
export function memoryJournal(storage = memoryJournalStorage()): JournalCore & { storage: typeof storage } {
  const core = journalCore(storage, { leaseDeadline: (at, seconds) => (at + seconds) * 1000 });
  return { ...core, storage };
}

/** One page of `rows` in (created_at, record_id) order, as a ReceiptJournal shard answers it. */
export function queryRows(rows: Iterable<JournalRow>, q: JournalQuery): { records: RecordSummary[]; more: boolean } {
  const after = q.after ?? { created_at: -1, record_id: "" };
  const hits = [...rows]
    .filter((r) => r.created_at > after.created_at || (r.created_at === after.created_at && r.record_id > after.record_id))
    .filter((r) => (q.agent_id === undefined || r.agent_id === q.agent_id) && (q.tool === undefined || r.tool === q.tool) && (q.verdict === undefined || r.verdict === q.verdict) && (q.state === undefined || r.state === q.state))
    .filter((r) => (q.from === undefined || r.created_at >= q.from) && (q.to === undefined || r.created_at <= q.to))
    .sort((a, b) => a.created_at - b.created_at || (a.record_id < b.record_id ? -1 : 1));
  const records = hits.slice(0, q.limit).map(({ record_id, trace_id, agent_id, tool, verdict, state, effect, outcome_status, revision, created_at, updated_at }) => ({ record_id, trace_id, agent_id, tool, verdict, state, effect, outcome_status, revision, created_at, updated_at }));
  return { records, more: hits.length > q.limit };
}

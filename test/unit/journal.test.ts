/**
 * The journal under Node: the shared port suite on the memory adapter, the whole 16 × 16
 * transition table as port results, effect dispositions consistent with state, a lapsed lease
 * reported as `unknown`, and a corrupted or reordered history refused on load.
 */
import { describe, expect, it } from "vitest";
import { EFFECT_DISPOSITIONS, EFFECTS, JOURNAL_STATES, TRANSITIONS, isAllowedTransition, type JournalState } from "../../worker/protocol/journal/lifecycle.js";
import { memoryJournal } from "../../worker/protocol/journal/memory.js";
import { entryDigest, historySize, JournalInputError, MAX_REPEATING_HISTORY, MAX_REPEATING_HISTORY_SIZE, MAX_TRANSITION_BYTES } from "../../worker/protocol/journal/core.js";
import { journalPortSuite, RECEIPT } from "../support/journal-suite.js";
type JournalExtensions = Parameters<ReturnType<typeof memoryJournal>["append"]>[0]["extensions"];

const AT = 1_900_000_000;
journalPortSuite("memory", () => {
  const j = memoryJournal();
  const asyncify = <A extends unknown[], R>(f: (...a: A) => R) => async (...a: A) => f(...a);
  return {
    reserve: asyncify(j.reserve), append: asyncify(j.append), appendMany: asyncify(j.appendMany), claim: asyncify(j.claim),
    verifyFence: asyncify(j.verifyFence), load: asyncify(j.load), loadByIdempotency: asyncify(j.loadByIdempotency),
  };
});

/** The shortest path of edges from `reserved` to every state. */
function paths(): Map<JournalState, JournalState[]> {
  const found = new Map<JournalState, JournalState[]>([["reserved", []]]);
  const queue: JournalState[] = ["reserved"];
  while (queue.length) {
    const s = queue.shift()!;
    for (const t of TRANSITIONS[s]) if (!found.has(t)) (found.set(t, [...found.get(s)!, t]), queue.push(t));
  }
  return found;
}

describe("the lifecycle", () => {
  it("is exactly the llm-core diagram: 30 edges, and every state reachable from reserved", () => {
    expect(Object.values(TRANSITIONS).flat()).toHaveLength(30);
    expect([...paths().keys()].sort()).toEqual([...JOURNAL_STATES].sort());
    expect(isAllowedTransition("ready", "ready")).toBe(false);
    expect(isAllowedTransition("indeterminate", "indeterminate")).toBe(false);
  });

  it("nothing before started carries an effect other than not-started, and every state can carry one", () => {
    for (const s of ["reserved", "awaiting_policy", "awaiting_approval", "ready", "denied", "expired", "cancelled_before_start"] as const) expect(EFFECTS[s]).toEqual(["not-started"]);
    for (const s of JOURNAL_STATES) expect(EFFECTS[s].length).toBeGreaterThan(0);
    for (const s of ["started", "succeeded", "failed_after_start", "indeterminate", "reconciliation_required", "compensation_required", "compensating", "compensated", "compensation_failed"] as const) expect(EFFECTS[s]).not.toContain("not-started");
  });

  const route = paths();
  /** A fresh record driven along the shortest path to `from`: `started` is entered by a claim, as it must be. */
  function at(from: JournalState) {
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: `to-${from}`, action_digest: "d", at: AT });
    if (r.kind !== "created") throw new Error(r.kind);
    const id = r.record.record_id;
    let revision = 1;
    let fence: number | undefined;
    for (const step of route.get(from)!) {
      const a = step === "started" ? j.claim({ record_id: id, at: AT, lease_seconds: 60 }) : j.append({ record_id: id, expected_revision: revision, at: AT, fence, to: step, effect: EFFECTS[step][0] });
      if (a.kind !== "appended" && a.kind !== "claimed") throw new Error(`${step}: ${a.kind}`);
      revision = a.record.revision;
      fence = a.kind === "claimed" ? a.fence : undefined;
    }
    return { j, id, revision, fence };
  }

  for (const from of JOURNAL_STATES) {
    it(`from ${from}: every allowed edge is appended (started only by a claim), every other target is an illegal-transition result`, () => {
      for (const to of JOURNAL_STATES) {
        const { j, id, revision, fence } = at(from);
        const result = j.append({ record_id: id, expected_revision: revision, at: AT, fence, to, effect: EFFECTS[to][0] });
        if (isAllowedTransition(from, to) && !(to === "started" && from !== "started")) expect(result, `${from} → ${to}`).toMatchObject({ kind: "appended", record: { state: to } });
        else expect(result, `${from} → ${to}`).toMatchObject({ kind: "illegal-transition", from, to });
        // An effect the target state cannot carry is refused on an allowed edge too.
        if (isAllowedTransition(from, to)) {
          const wrong = EFFECT_DISPOSITIONS.find((e) => !EFFECTS[to].includes(e))!;
          const again = at(from);
          expect(again.j.append({ record_id: again.id, expected_revision: again.revision, at: AT, fence: again.fence, to, effect: wrong })).toMatchObject({ kind: "illegal-transition" });
        }
      }
    });
  }

  it("an append never enters started: ready → started without a claim is illegal-transition, whatever fence it names", () => {
    const { j, id, revision } = at("ready");
    for (const fence of [undefined, 0, 1]) expect(j.append({ record_id: id, expected_revision: revision, at: AT, fence, to: "started", effect: "unknown" })).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started", reason: "a record enters started only by a claim" });
    expect(j.appendMany({ record_id: id, expected_revision: revision, at: AT, transitions: [{ to: "started", effect: "unknown" }, { to: "succeeded", effect: "applied" }] })).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started" });
    expect(j.load(id)).toMatchObject({ kind: "found", record: { state: "ready", revision } });
    // The honest path: claim, then leave started under the fence the claim issued.
    const c = j.claim({ record_id: id, at: AT, lease_seconds: 60 });
    if (c.kind !== "claimed") throw new Error(c.kind);
    expect(j.append({ record_id: id, expected_revision: c.record.revision, at: AT, to: "succeeded", effect: "applied" })).toEqual({ kind: "fence-conflict", fence: null, current: c.fence });
    expect(j.append({ record_id: id, expected_revision: c.record.revision, at: AT, fence: c.fence, to: "started", effect: "unknown" })).toMatchObject({ kind: "appended", record: { state: "started", lease: { fence: c.fence } } });
    expect(j.append({ record_id: id, expected_revision: c.record.revision + 1, at: AT, fence: c.fence, to: "succeeded", effect: "applied" })).toMatchObject({ kind: "appended", record: { state: "succeeded" } });
  });

  it("a receipt recorded by an append must have the form of a CCS receipt: an object carrying only a verdict is MALFORMED_REQUEST", () => {
    const { j, id, revision } = at("awaiting_policy");
    const err = (() => {
      try {
        j.append({ record_id: id, expected_revision: revision, at: AT, to: "ready", effect: "not-started", receipt: { verdict: "allow" } });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(JournalInputError);
    expect((err as JournalInputError).code).toBe("MALFORMED_REQUEST");
    expect(j.load(id)).toMatchObject({ kind: "found", record: { state: "awaiting_policy", verdict: null, revision } });
    expect(j.append({ record_id: id, expected_revision: revision, at: AT, to: "ready", effect: "not-started", receipt: RECEIPT })).toMatchObject({ kind: "appended", record: { state: "ready", verdict: "allow" } });
  });
});

describe("a history's length", () => {
  it("a repeated state is refused past MAX_REPEATING_HISTORY entries (nothing written), while every forward edge still closes the record", () => {
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: "loop", action_digest: "d", at: AT });
    if (r.kind !== "created") throw new Error(r.kind);
    const id = r.record.record_id;
    let revision = 1;
    const step = (to: JournalState) => j.append({ record_id: id, expected_revision: revision, at: AT, to, effect: "not-started", detail: { f: "x".repeat(1024) } });
    expect(step("awaiting_policy")).toMatchObject({ kind: "appended" });
    revision = 2;
    // Before the bound, awaiting_approval → awaiting_approval could be appended for ever: ~1,100 entries of 32 KiB made a load of 36 MB, past what a Durable Object may answer.
    while (revision < MAX_REPEATING_HISTORY) {
      const a = step("awaiting_approval");
      if (a.kind !== "appended") throw new Error(a.kind);
      revision = a.record.revision;
    }
    expect(revision).toBe(MAX_REPEATING_HISTORY);
    const err = (() => {
      try {
        step("awaiting_approval");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(JournalInputError);
    expect((err as JournalInputError).code).toBe("MALFORMED_REQUEST");
    expect(j.load(id)).toMatchObject({ kind: "found", record: { state: "awaiting_approval", revision: MAX_REPEATING_HISTORY } });
    // Forward edges are never refused: the record still goes ready → started → started (lapse) → succeeded → compensation.
    expect(step("ready")).toMatchObject({ kind: "appended", record: { revision: MAX_REPEATING_HISTORY + 1 } });
    const c = j.claim({ record_id: id, at: AT, lease_seconds: 30 });
    if (c.kind !== "claimed") throw new Error(c.kind);
    expect(() => j.append({ record_id: id, expected_revision: c.record.revision, at: AT, fence: c.fence, to: "started", effect: "unknown" })).toThrow(JournalInputError);
    expect(j.append({ record_id: id, expected_revision: c.record.revision, at: AT, fence: c.fence + 1, to: "started", effect: "unknown" })).toMatchObject({ kind: "fence-conflict" });
    expect(j.lapseDue((AT + 30) * 1000)).toEqual([id]);
    const lapsed = j.load(id);
    if (lapsed.kind !== "found") throw new Error(lapsed.kind);
    expect(j.append({ record_id: id, expected_revision: lapsed.record.revision, at: AT, to: "succeeded", effect: "applied" })).toMatchObject({ kind: "appended", record: { state: "succeeded" } });
    // The bound keeps a full history's load within what one answer may carry.
    expect(MAX_REPEATING_HISTORY * MAX_TRANSITION_BYTES).toBeLessThanOrEqual(16 * 1024 * 1024);
  });
});

describe("a history's size", () => {
  it("a repeated state is refused once the history would pass MAX_REPEATING_HISTORY_SIZE, well before 256 large entries; forward edges still close the record", () => {
    // Every call replays the whole history: 256 entries of 32 KiB cost 0.3-0.7 s a call (review rv-51).
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: "large-loop", action_digest: "d", at: AT });
    if (r.kind !== "created") throw new Error(r.kind);
    const id = r.record.record_id;
    let revision = 1;
    const step = (to: JournalState) => j.append({ record_id: id, expected_revision: revision, at: AT, to, effect: "not-started", detail: { f: "x".repeat(30_000) } });
    const first = step("awaiting_policy");
    if (first.kind !== "appended") throw new Error(first.kind);
    revision = first.record.revision;
    let refused: unknown = null;
    while (revision < MAX_REPEATING_HISTORY && refused === null) {
      try {
        const a = step("awaiting_approval");
        if (a.kind !== "appended") throw new Error(a.kind);
        revision = a.record.revision;
      } catch (e) {
        refused = e;
      }
    }
    expect(refused).toBeInstanceOf(JournalInputError);
    expect((refused as JournalInputError).message).toMatch(/refused past 1048576; record its next state instead/);
    expect(revision).toBeLessThan(40);
    const loaded = j.load(id);
    if (loaded.kind !== "found") throw new Error(loaded.kind);
    expect(loaded.record.revision).toBe(revision);
    expect(historySize(loaded.history)).toBeLessThanOrEqual(MAX_REPEATING_HISTORY_SIZE);
    expect(historySize(loaded.history) + 30_000).toBeGreaterThan(MAX_REPEATING_HISTORY_SIZE);
    expect(step("ready")).toMatchObject({ kind: "appended", record: { state: "ready", revision: revision + 1 } });
  });
});

describe("a record's reservation, read without its history", () => {
  it("answers what the reservation said from at most three entries; an altered reservation, successor link or latest entry is corrupt; an unknown record not-found", () => {
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: "reservation-read", action_digest: "d", at: AT, attributes: { invocation_id: "inv-1", tool: "t" } });
    if (r.kind !== "created") throw new Error(r.kind);
    const id = r.record.record_id;
    const expected = { kind: "found", record_id: id, idempotency_key: "reservation-read", action_digest: "d", attributes: { invocation_id: "inv-1", tool: "t" } };
    expect(j.reservation(id)).toEqual(expected);
    let revision = 1;
    for (const to of ["awaiting_policy", "awaiting_approval", "awaiting_approval", "awaiting_approval"] as const) {
      const a = j.append({ record_id: id, expected_revision: revision, at: AT, to, effect: "not-started", detail: { n: revision } });
      if (a.kind !== "appended") throw new Error(a.kind);
      revision = a.record.revision;
    }
    // Only revisions 1, 2 and the latest are read.
    const read: number[][] = [];
    const entriesAt = j.storage.entriesAt;
    j.storage.entriesAt = (rid, revisions) => (read.push([...revisions]), entriesAt(rid, revisions));
    expect(j.reservation(id)).toEqual(expected);
    expect(read).toEqual([[1, 2, 5]]);
    expect(j.reservation("0".repeat(32))).toEqual({ kind: "not-found" });
    const history = j.storage.entries.get(id)!;
    const alter = (i: number, change: (e: any) => any) => {
      const kept = history[i];
      history[i] = change(kept);
      const answer = j.reservation(id);
      history[i] = kept;
      return answer;
    };
    expect(alter(0, (e) => ({ ...e, detail: { ...e.detail, attributes: {} } }))).toEqual({ kind: "corrupt", record_id: id, reason: "entry 2 does not follow entry 1" });
    expect(alter(4, (e) => ({ ...e, detail: { n: 99 } }))).toEqual({ kind: "corrupt", record_id: id, reason: "the latest entry does not match the index row's head digest: it was altered" });
    expect(alter(0, (e) => ({ ...e, event: "append" }))).toEqual({ kind: "corrupt", record_id: id, reason: "the first entry is not a reservation" });
    expect(j.reservation(id)).toEqual(expected);
  });
});

describe("leases and recovery from history", () => {
  function started() {
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: "lease", action_digest: "d", at: AT });
    if (r.kind !== "created") throw new Error(r.kind);
    j.appendMany({ record_id: r.record.record_id, expected_revision: 1, at: AT, transitions: [{ to: "awaiting_policy", effect: "not-started" }, { to: "ready", effect: "not-started" }] });
    const c = j.claim({ record_id: r.record.record_id, at: AT, lease_seconds: 30 });
    if (c.kind !== "claimed") throw new Error(c.kind);
    return { j, id: r.record.record_id };
  }

  it("a lease that lapses without a result is reported unknown, revokes its fence, and stays open until reconciled", () => {
    const { j, id } = started();
    expect(j.lapseDue((AT + 29) * 1000)).toEqual([]);
    expect(j.lapseDue((AT + 30) * 1000)).toEqual([id]);
    const loaded = j.load(id);
    expect(loaded).toMatchObject({ kind: "found", record: { state: "started", effect: "unknown", outcome_status: "unknown", lease: null, lease_lapsed: true, fence: 2 } });
    expect(j.append({ record_id: id, expected_revision: 5, at: AT + 40, fence: 1, to: "succeeded", effect: "applied" })).toEqual({ kind: "fence-conflict", fence: 1, current: null });
    expect(j.claim({ record_id: id, at: AT + 40, lease_seconds: 30 })).toEqual({ kind: "not-eligible", state: "started", lease_lapsed: true });
    expect(j.append({ record_id: id, expected_revision: 5, at: AT + 40, to: "started", effect: "unknown" })).toMatchObject({ kind: "illegal-transition", from: "started", to: "started" });
    expect(j.append({ record_id: id, expected_revision: 5, at: AT + 40, to: "succeeded", effect: "applied" })).toMatchObject({ kind: "appended", record: { state: "succeeded", outcome_status: "confirmed" } });
  });

  it("a lease past its end holds no fence even before the alarm has lapsed it: a late result is fence-conflict, the outcome is recorded after the lapse", () => {
    const { j, id } = started();
    // The alarm has not run (lapseDue not called); the lease ended at AT + 30.
    expect(j.verifyFence({ record_id: id, fence: 1, at: AT + 29 })).toMatchObject({ kind: "valid" });
    expect(j.verifyFence({ record_id: id, fence: 1, at: AT + 30 })).toEqual({ kind: "fence-conflict", fence: 1, current: null });
    // Before, the old holder's fence still held here and this was appended.
    expect(j.append({ record_id: id, expected_revision: 4, at: AT + 31, fence: 1, to: "succeeded", effect: "applied" })).toEqual({ kind: "fence-conflict", fence: 1, current: null });
    expect(j.append({ record_id: id, expected_revision: 4, at: AT + 31, fence: 1, to: "started", effect: "unknown" })).toMatchObject({ kind: "illegal-transition", reason: expect.stringMatching(/no lease is held/) });
    expect(j.claim({ record_id: id, at: AT + 31, lease_seconds: 30 })).toEqual({ kind: "not-eligible", state: "started", lease_lapsed: true });
    expect(j.load(id)).toMatchObject({ kind: "found", record: { revision: 4, lease: { fence: 1 } } });
    // The outcome, without a fence, is written after the lapse the alarm would have written, in one step.
    const done = j.append({ record_id: id, expected_revision: 4, at: AT + 31, to: "failed_after_start", effect: "unknown" });
    expect(done).toMatchObject({ kind: "appended", record: { state: "failed_after_start", revision: 6, fence: 2, lease: null } });
    if (done.kind !== "appended") throw new Error(done.kind);
    expect(done.entries.map((e) => [e.event, e.at, e.fence])).toEqual([["lapse", AT + 30, 2], ["append", AT + 31, null]]);
    // The alarm, late, finds nothing left to lapse.
    expect(j.lapseDue((AT + 60) * 1000)).toEqual([]);
  });

  it("a reordered history is refused on load, never reinterpreted", () => {
    const { j, id } = started();
    const entries = j.storage.entries.get(id)!;
    [entries[1], entries[2]] = [entries[2], entries[1]];
    expect(j.load(id)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/out of order/) });
  });

  it("an altered entry, even with its revision intact, is refused: the next entry no longer follows it", () => {
    const { j, id } = started();
    const entries = j.storage.entries.get(id)!;
    entries[2] = { ...entries[2], to: "awaiting_approval" };
    expect(j.load(id)).toMatchObject({ kind: "corrupt" });
    expect(j.claim({ record_id: id, at: AT, lease_seconds: 1 })).toMatchObject({ kind: "corrupt" });
  });

  it("the latest entry, which no successor vouches for, cannot be altered either: the index row keeps its digest", () => {
    const { j, id } = started();
    const loaded = j.load(id);
    if (loaded.kind !== "found") throw new Error(loaded.kind);
    const done = j.append({ record_id: id, expected_revision: loaded.record.revision, at: AT, fence: loaded.record.lease!.fence, to: "succeeded", effect: "applied", receipt: RECEIPT, detail: { note: "as recorded" } });
    expect(done).toMatchObject({ kind: "appended", record: { verdict: "allow" } });
    const entries = j.storage.entries.get(id)!;
    const last = entries.length - 1;
    const honest = entries[last];
    // Before the head digest, each of these loaded as found: the altered receipt even became the record's verdict.
    for (const altered of [{ ...honest, receipt: { ...RECEIPT, verdict: "deny" } }, { ...honest, detail: { note: "rewritten" } }, { ...honest, at: AT + 1 }, { ...honest, effect: "none" as const }]) {
      entries[last] = altered;
      expect(j.load(id)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/latest entry/) });
    }
    entries[last] = honest;
    expect(j.load(id)).toMatchObject({ kind: "found", record: { state: "succeeded", verdict: "allow" } });
    // So is the reservation while it is the only entry (its attributes name the invocation a usage receipt is checked against).
    const r = j.reserve({ idempotency_key: "lone", action_digest: "d", at: AT, attributes: { invocation_id: "inv-1" } });
    if (r.kind !== "created") throw new Error(r.kind);
    const lone = j.storage.entries.get(r.record.record_id)!;
    lone[0] = { ...lone[0], detail: { ...lone[0].detail!, attributes: { invocation_id: "inv-2" } } };
    expect(j.load(r.record.record_id)).toMatchObject({ kind: "corrupt" });
    // A row written before the digest existed (head absent) is read as before, and its next write sets it.
    const old = started();
    const row = old.j.storage.rows.get(old.id)!;
    old.j.storage.rows.set(old.id, { ...row, head: null });
    expect(old.j.load(old.id)).toMatchObject({ kind: "found" });
  });

  it("a rewritten chain with an illegal edge is refused, and so is an index row that disagrees", () => {
    const { j, id } = started();
    const entries = j.storage.entries.get(id)!;
    entries.splice(2, 1);
    entries[2] = { ...entries[2], revision: 3, from: "awaiting_policy", prev: entryDigest(entries[1]) };
    expect(j.load(id)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/awaiting_policy → started is not a lifecycle edge/) });
    const other = started();
    other.j.storage.rows.set(other.id, { ...other.j.storage.rows.get(other.id)!, state: "succeeded" });
    expect(other.j.load(other.id)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/index row/) });
  });
});

describe("provider extensions holding header lists", () => {
  /** Stores `extensions` on a fresh record's first step and answers them as loaded back; no secret survives anywhere in the record. */
  const stored = (key: string, extensions: JournalExtensions, secrets: readonly string[] = []) => {
    const j = memoryJournal();
    const r = j.reserve({ idempotency_key: key, action_digest: "d", at: AT });
    if (r.kind !== "created") throw new Error(r.kind);
    expect(j.append({ record_id: r.record.record_id, expected_revision: 1, at: AT, to: "awaiting_policy", effect: "not-started", extensions }).kind).toBe("appended");
    const loaded = j.load(r.record.record_id);
    if (loaded.kind !== "found") throw new Error(loaded.kind);
    for (const s of secrets) expect(JSON.stringify(loaded), s).not.toContain(s);
    return loaded.history[1].extensions;
  };

  it("a credential header's value is redacted in {name, value} entries (HAR), [name, value] pairs and flat [name, value, …] lists (review rv-113)", () => {
    const secrets = ["opaqueToken12345", "k3y-abcdef123456", "sid=abcdef", "proxy-0123456789", "tok-flat-999", "capitalised-999"];
    const extensions = {
      "com.example.provider": {
        har: [{ name: "Authorization", value: secrets[0] }, { name: "Content-Type", value: "application/json" }],
        postman: [{ key: "X-Api-Key", value: secrets[1], type: "text" }, { key: "Accept", value: "*/*" }, { Name: "Set-Cookie", Value: "sid=capitalised-999" }],
        entries: [["cookie", secrets[2]], ["accept", "*/*"], ["Proxy-Authorization", secrets[3]]],
        rawHeaders: ["Host", "api.example", "X-Auth-Token", secrets[4], "Accept", "*/*"],
        tags: ["weather", "lisbon", "daily"],
      },
    };
    expect(stored("ext-headers", extensions, secrets)).toEqual({
      "com.example.provider": {
        har: [{ name: "Authorization", value: "[redacted]" }, { name: "Content-Type", value: "application/json" }],
        postman: [{ key: "X-Api-Key", value: "[redacted]", type: "text" }, { key: "Accept", value: "*/*" }, { Name: "Set-Cookie", Value: "[redacted]" }],
        entries: [["cookie", "[redacted]"], ["accept", "*/*"], ["Proxy-Authorization", "[redacted]"]],
        rawHeaders: ["Host", "api.example", "X-Auth-Token", "[redacted]", "Accept", "*/*"],
        tags: ["weather", "lisbon", "daily"],
      },
    });
  });

  it("a flat header list holding HTTP/2 pseudo-headers is still read as one; a [name, object] pair is evidence, not a header", () => {
    const extensions = {
      "com.example.provider": {
        rawHeaders: [":method", "GET", ":path", "/v1/items", ":authority", "api.example", "authorization", "h2-opaque-0123"],
        steps: ["password_reset", { via: "email", ticket: "T-1234" }],
      },
    };
    expect(stored("ext-h2-headers", extensions)).toEqual({
      "com.example.provider": {
        rawHeaders: [":method", "GET", ":path", "/v1/items", ":authority", "api.example", "authorization", "[redacted]"],
        steps: ["password_reset", { via: "email", ticket: "T-1234" }],
      },
    });
  });

  it("{field, value} and {header_name, header_value} entries, OpenTelemetry's header attributes and signing, HMAC, JWT and subscription keys are redacted; key ids and token counts kept (stored as sent before)", () => {
    const secrets = ["SECRET-field-1", "SECRET-header-2", "SECRET-camel-3", "SECRET-otel-4", "SECRET-otel-5", "SECRET-sign-6", "SECRET-sign-7", "SECRET-hmac-8", "SECRET-bearer-9", "SECRET-jwt-10", "SECRET-apim-11"];
    const extensions = {
      "com.example.provider": {
        headers: [{ field: "Authorization", value: secrets[0] }, { header_name: "X-Api-Key", header_value: secrets[1] }, { headerName: "Cookie", headerValue: secrets[2] }, { field: "Accept", value: "*/*" }],
        "http.request.header.authorization": [secrets[3]],
        "http.request.header.cookie": [`lang=en; sid=${secrets[4]}`],
        "http.request.method": "GET",
        signingKey: secrets[5], signing_key: secrets[6], hmac: secrets[7], bearer: secrets[8], jwt: secrets[9], "Ocp-Apim-Subscription-Key": secrets[10],
        key_id: "k-1", kid: "k-2", public_key: "MCowBQYDK2VwAyEA", token_count: 12, input_tokens: 3, max_tokens: 100,
      },
    };
    expect(stored("ext-more-names", extensions, secrets)).toEqual({
      "com.example.provider": {
        headers: [{ field: "Authorization", value: "[redacted]" }, { header_name: "X-Api-Key", header_value: "[redacted]" }, { headerName: "Cookie", headerValue: "[redacted]" }, { field: "Accept", value: "*/*" }],
        "http.request.header.authorization": "[redacted]",
        "http.request.header.cookie": "[redacted]",
        "http.request.method": "GET",
        signingKey: "[redacted]", signing_key: "[redacted]", hmac: "[redacted]", bearer: "[redacted]", jwt: "[redacted]", "Ocp-Apim-Subscription-Key": "[redacted]",
        key_id: "k-1", kid: "k-2", public_key: "MCowBQYDK2VwAyEA", token_count: 12, input_tokens: 3, max_tokens: 100,
      },
    });
  });

  it("a header recorded as OpenTelemetry names it (http.request.header.<name>) is a header: as an attribute {key, value} and as a member", () => {
    const secrets = ["otel-opaque-0123", "otel-sid-4567", "otel-member-89ab"];
    const extensions = {
      "com.example.provider": {
        attributes: [
          { key: "http.request.header.authorization", value: { stringValue: secrets[0] } },
          { key: "http.request.header.cookie", value: { arrayValue: { values: [{ stringValue: `sid=${secrets[1]}` }] } } },
          { key: "http.request.method", value: { stringValue: "GET" } },
        ],
        tags: { "http.request.header.authorization": [secrets[2]], "http.response.status_code": 200 },
      },
    };
    expect(stored("ext-otel-headers", extensions, secrets)).toEqual({
      "com.example.provider": {
        attributes: [
          { key: "http.request.header.authorization", value: "[redacted]" },
          { key: "http.request.header.cookie", value: "[redacted]" },
          { key: "http.request.method", value: { stringValue: "GET" } },
        ],
        tags: { "http.request.header.authorization": "[redacted]", "http.response.status_code": 200 },
      },
    });
  });
});

describe("a deny awaiting a challenge's evidence", () => {
  it("reports outcome confirmed, as every deny does (CCS §4.2: finalised at admission), not dispatched; an escalation awaiting approval stays dispatched (review rv-113)", () => {
    const j = memoryJournal();
    const awaiting = (key: string, verdict: string) => {
      const r = j.reserve({ idempotency_key: key, action_digest: "d", at: AT });
      if (r.kind !== "created") throw new Error(r.kind);
      const a = j.appendMany({ record_id: r.record.record_id, expected_revision: 1, at: AT, transitions: [{ to: "awaiting_policy", effect: "not-started" }, { to: "awaiting_approval", effect: "not-started", receipt: { ...RECEIPT, verdict, block_reason: verdict === "allow" ? "" : "SEC-005: a destructive tool needs a human approval" } }] });
      if (a.kind !== "appended") throw new Error(a.kind);
      return { appended: a.record, loaded: j.load(r.record.record_id) };
    };
    const deny = awaiting("challenged-deny", "deny");
    expect(deny.appended).toMatchObject({ state: "awaiting_approval", verdict: "deny", outcome_status: "confirmed" });
    expect(deny.loaded).toMatchObject({ kind: "found", record: { outcome_status: "confirmed" } });
    expect(j.storage.rows.get(deny.appended.record_id)!.outcome_status).toBe("confirmed");
    const escalate = awaiting("escalated", "escalate");
    expect(escalate.appended).toMatchObject({ state: "awaiting_approval", verdict: "escalate", outcome_status: "dispatched" });
  });
});

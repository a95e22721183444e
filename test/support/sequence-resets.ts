/**
 * One paging scenario for the audited sequence resets, run against the IssuerLedger (workerd) and
 * the in-memory ledger (Node) alike, so both answer the same pages and the same cursors.
 */
import { expect } from "vitest";
import { SEQUENCE_RESETS_PAGE, type SequenceResetAudit, type SequenceResetCursor, type SequenceResetPage } from "../../worker/protocol/ledger.js";

/** The part of either ledger the scenario drives (a Durable Object stub answers promises). */
export interface ResetsLedger {
  resetSequence(fingerprint: string, audit: SequenceResetAudit | null): unknown;
  sequenceResets(before: SequenceResetCursor | null): SequenceResetPage | Promise<SequenceResetPage>;
}

const FINGERPRINT = "3".repeat(64);

/**
 * Records SEQUENCE_RESETS_PAGE + 5 resets whose times are out of recording order and often alike,
 * then pages through them: the newest page and its cursor, the older rest, and a page that ends
 * exactly at the oldest reset (no cursor).
 */
export async function pagesResets(l: ResetsLedger): Promise<void> {
  const n = SEQUENCE_RESETS_PAGE + 5;
  const at = (i: number) => 1_900_000_000 + ((i * 3) % 7);
  const entry = (i: number) => ({ fingerprint: FINGERPRINT, kid: "k3", at: at(i), reason: `reset ${i}`, by: "admin" as const, previous_highest: null });
  expect(await l.sequenceResets(null)).toEqual({ resets: [], total: 0, next: null });
  for (let i = 0; i < n; i++) {
    const { previous_highest: _, ...audit } = entry(i);
    await l.resetSequence(FINGERPRINT, { ...audit, highest_elsewhere: null });
  }
  // The order is (at, the order recorded in): the i-th recorded reset has rowid i + 1.
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => at(a) - at(b) || a - b);
  const cursorAt = (k: number) => ({ at: at(order[k]), rowid: order[k] + 1 });
  const newest = await l.sequenceResets(null);
  expect(newest).toEqual({ resets: order.slice(5).map(entry), total: n, next: cursorAt(5) });
  expect(newest.resets).toHaveLength(SEQUENCE_RESETS_PAGE);
  expect(await l.sequenceResets(newest.next)).toEqual({ resets: order.slice(0, 5).map(entry), total: n, next: null });
  // Exactly a page older than the cursor: all of them, and nothing older to point at.
  expect(await l.sequenceResets(cursorAt(SEQUENCE_RESETS_PAGE))).toEqual({ resets: order.slice(0, SEQUENCE_RESETS_PAGE).map(entry), total: n, next: null });
  // A cursor is a position, not a row: one before every reset answers an empty page.
  expect(await l.sequenceResets({ at: 0, rowid: 1 })).toEqual({ resets: [], total: n, next: null });
}

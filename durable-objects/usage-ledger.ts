/**
 * UsageLedger: the usage, cost and reconciliation evidence one relying party stored, one object
 * per party (see docs/capacity.md). A row per invocation holds the usage receipt (immutable once
 * stored), what rode on it (cache attribution, budget decisions, a journal record reference) and
 * the latest cost estimate and reconciliation derived from it. Every record arrives already
 * built by the protocol factories, as canonical JSON; each method reads and writes in one
 * synchronous transaction. Nothing is stored before the first receipt: the table is created by
 * it, and a read of an unknown invocation writes nothing.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { hasTable } from "./sql.js";

/** A receipt and what rode on it, as canonical JSON texts. */
export interface UsageEntry {
  invocation_id: string;
  receipt: string;
  /** The receipt's attribution kind, kept as a column for the counts. */
  attribution: string;
  journal_record: string | null;
  cache: string | null;
  budget_decisions: string;
}

export interface StoredUsage extends UsageEntry {
  estimate: string | null;
  estimate_kind: string | null;
  reconciliation: string | null;
  reconciliation_kind: string | null;
  /** Unix seconds. */
  stored_at: number;
  updated_at: number;
}

export type StoreResult = { kind: "stored" } | { kind: "existing"; stored: StoredUsage } | { kind: "conflict" };
export type DeriveResult = { kind: "stored" } | { kind: "not-found" } | { kind: "conflict" };

/** Counts for a status view: receipts by attribution, estimates by kind, reconciliations by disposition. */
export interface UsageCounts {
  receipts: number;
  attribution: Record<string, number>;
  estimates: Record<string, number>;
  reconciliation: Record<string, number>;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS usage (
    invocation_id TEXT PRIMARY KEY,
    receipt TEXT NOT NULL,
    attribution TEXT NOT NULL,
    journal_record TEXT,
    cache TEXT,
    budget_decisions TEXT NOT NULL,
    estimate TEXT,
    estimate_kind TEXT,
    reconciliation TEXT,
    reconciliation_kind TEXT,
    stored_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

export class UsageLedger extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private created = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
  }

  /** Whether the first receipt has created the table; a read-only look at the schema. */
  private exists(): boolean {
    this.created ||= hasTable(this.sql, "usage");
    return this.created;
  }

  private row(invocationId: string): StoredUsage | null {
    if (!this.exists()) return null;
    const [held] = this.sql.exec("SELECT * FROM usage WHERE invocation_id = ?", invocationId).toArray();
    return held ? (held as unknown as StoredUsage) : null;
  }

  /**
   * Stores a receipt once. The same entry again is `existing` (a retried call); another entry for
   * the same invocation is a `conflict`: a receipt is never rewritten.
   */
  store(entry: UsageEntry, at: number): StoreResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(entry.invocation_id);
      if (held) {
        const same = held.receipt === entry.receipt && held.journal_record === entry.journal_record && held.cache === entry.cache && held.budget_decisions === entry.budget_decisions;
        return same ? { kind: "existing" as const, stored: held } : { kind: "conflict" as const };
      }
      if (!this.exists()) this.sql.exec(SCHEMA);
      this.created = true;
      this.sql.exec(
        "INSERT INTO usage (invocation_id, receipt, attribution, journal_record, cache, budget_decisions, stored_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        entry.invocation_id, entry.receipt, entry.attribution, entry.journal_record, entry.cache, entry.budget_decisions, at, at,
      );
      return { kind: "stored" as const };
    });
  }

  read(invocationId: string): StoredUsage | null {
    return this.row(invocationId);
  }

  /**
   * Records the latest estimate of a stored receipt; `receipt` is the canonical receipt the
   * estimate was derived from, which must still be the stored one. A new estimate clears the
   * reconciliation of the previous one.
   */
  recordEstimate(invocationId: string, receipt: string, estimate: string, kind: string, at: number): DeriveResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(invocationId);
      if (!held) return { kind: "not-found" as const };
      if (held.receipt !== receipt) return { kind: "conflict" as const };
      this.sql.exec(
        "UPDATE usage SET estimate = ?, estimate_kind = ?, reconciliation = NULL, reconciliation_kind = NULL, updated_at = ? WHERE invocation_id = ?",
        estimate, kind, at, invocationId,
      );
      return { kind: "stored" as const };
    });
  }

  /** Records a reconciliation of the stored estimate, which must still be `estimate` (the one reconciled). */
  recordReconciliation(invocationId: string, estimate: string, reconciliation: string, kind: string, at: number): DeriveResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(invocationId);
      if (!held) return { kind: "not-found" as const };
      if (held.estimate !== estimate) return { kind: "conflict" as const };
      this.sql.exec("UPDATE usage SET reconciliation = ?, reconciliation_kind = ?, updated_at = ? WHERE invocation_id = ?", reconciliation, kind, at, invocationId);
      return { kind: "stored" as const };
    });
  }

  counts(): UsageCounts {
    const counts: UsageCounts = { receipts: 0, attribution: {}, estimates: {}, reconciliation: {} };
    if (!this.exists()) return counts;
    const tally = (column: string, into: Record<string, number>) => {
      for (const { k, n } of this.sql.exec<{ k: string | null; n: number }>(`SELECT ${column} AS k, COUNT(*) AS n FROM usage GROUP BY ${column}`)) into[k ?? "none"] = n;
    };
    counts.receipts = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM usage").one().n;
    tally("attribution", counts.attribution);
    tally("estimate_kind", counts.estimates);
    tally("reconciliation_kind", counts.reconciliation);
    return counts;
  }
}

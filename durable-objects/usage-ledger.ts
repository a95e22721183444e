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
import { providerRecordKey, type ReconciledCost } from "../worker/protocol/usage/reconcile.js";

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
  /** The providerRecordKey of the provider record the reconciliation carries; null or absent without one. */
  provider_record?: string | null;
}

export type StoreResult = { kind: "stored" } | { kind: "existing"; stored: StoredUsage } | { kind: "conflict"; differs: UsagePart[] };
export type DeriveResult = { kind: "stored" } | { kind: "not-found" } | { kind: "conflict" } | { kind: "claimed"; by: string };

/** The parts of a stored entry that a store call with another entry can differ in. */
export type UsagePart = "receipt" | "journal_record" | "cache" | "budget_decisions";
const PARTS: readonly UsagePart[] = ["receipt", "journal_record", "cache", "budget_decisions"];

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
    updated_at INTEGER NOT NULL,
    provider_record TEXT
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS usage_provider_record ON usage (provider_record) WHERE provider_record IS NOT NULL;
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

  /**
   * `provider_record` (the key of the provider record the stored reconciliation carries, see
   * providerRecordKey) came after the first objects were created: an older table gets the column,
   * its index and the keys of the reconciliations it already holds, once, inside the caller's
   * transaction, before the first write that needs it.
   */
  private migrated = false;
  private migrate(): void {
    if (this.migrated) return;
    const columns = this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('usage')").toArray().map((c) => c.name);
    if (!columns.includes("provider_record")) {
      this.sql.exec("ALTER TABLE usage ADD COLUMN provider_record TEXT");
      this.sql.exec("CREATE INDEX IF NOT EXISTS usage_provider_record ON usage (provider_record) WHERE provider_record IS NOT NULL");
      for (const { invocation_id, reconciliation } of this.sql.exec<{ invocation_id: string; reconciliation: string }>("SELECT invocation_id, reconciliation FROM usage WHERE reconciliation IS NOT NULL").toArray()) {
        const { provider_record: record, estimate } = JSON.parse(reconciliation) as ReconciledCost;
        if (record) this.sql.exec("UPDATE usage SET provider_record = ? WHERE invocation_id = ?", providerRecordKey(record, estimate?.receipt?.provider_request_id), invocation_id);
      }
    }
    this.migrated = true;
  }

  private row(invocationId: string): StoredUsage | null {
    if (!this.exists()) return null;
    const [held] = this.sql.exec("SELECT * FROM usage WHERE invocation_id = ?", invocationId).toArray();
    return held ? (held as unknown as StoredUsage) : null;
  }

  /**
   * Stores a receipt once. The same entry again is `existing` (a retried call); another entry for
   * the same invocation is a `conflict` naming the parts that differ: a receipt is never rewritten.
   */
  store(entry: UsageEntry, at: number): StoreResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(entry.invocation_id);
      if (held) {
        const differs = PARTS.filter((part) => held[part] !== entry[part]);
        return differs.length === 0 ? { kind: "existing" as const, stored: held } : { kind: "conflict" as const, differs };
      }
      if (!this.exists()) {
        this.sql.exec(SCHEMA);
        this.migrated = true;
      }
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
   * reconciliation of the previous one (and releases its provider record); the same estimate
   * again is a retry and keeps it, so a late retry cannot free a record for a second invocation.
   */
  recordEstimate(invocationId: string, receipt: string, estimate: string, kind: string, at: number): DeriveResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(invocationId);
      if (!held) return { kind: "not-found" as const };
      if (held.receipt !== receipt) return { kind: "conflict" as const };
      if (held.estimate === estimate) return { kind: "stored" as const };
      this.migrate();
      this.sql.exec(
        "UPDATE usage SET estimate = ?, estimate_kind = ?, reconciliation = NULL, reconciliation_kind = NULL, provider_record = NULL, updated_at = ? WHERE invocation_id = ?",
        estimate, kind, at, invocationId,
      );
      return { kind: "stored" as const };
    });
  }

  /**
   * Records a reconciliation of the stored estimate, which must still be `estimate` (the one
   * reconciled). `recordKey` is the providerRecordKey of the provider record it carries (null
   * without one): a record another invocation's stored reconciliation already carries is
   * `claimed`, since one provider record is about one call. A new estimate releases it.
   */
  recordReconciliation(invocationId: string, estimate: string, reconciliation: string, kind: string, recordKey: string | null, at: number): DeriveResult {
    return this.ctx.storage.transactionSync(() => {
      const held = this.row(invocationId);
      if (!held) return { kind: "not-found" as const };
      if (held.estimate !== estimate) return { kind: "conflict" as const };
      this.migrate();
      if (recordKey !== null) {
        const [other] = this.sql.exec<{ invocation_id: string }>("SELECT invocation_id FROM usage WHERE provider_record = ? AND invocation_id != ? LIMIT 1", recordKey, invocationId).toArray();
        if (other) return { kind: "claimed" as const, by: other.invocation_id };
      }
      this.sql.exec("UPDATE usage SET reconciliation = ?, reconciliation_kind = ?, provider_record = ?, updated_at = ? WHERE invocation_id = ?", reconciliation, kind, recordKey, at, invocationId);
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

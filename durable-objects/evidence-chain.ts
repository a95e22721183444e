/**
 * EvidenceChain: one live chain of custody, owned by the relying party that appended its hop 0.
 * An append is judged by the chain's own hop rule (`judgeHop`, the offline verifier's) and
 * written in one synchronous transaction, so of two competing appends of hop n exactly one wins
 * and the chain never forks; anything refused leaves it unchanged. Nothing is stored before the
 * first append: the tables are created by it, and a read of an unknown chain writes nothing. The
 * route addresses an object only for a chain in the registry (KV `chain:<chain_id>`) or for a new
 * chain's hop 0 whose receipt has verified; the registry may lag, so ownership is judged here
 * again, in the append's transaction. Each hop keeps the fingerprint of the key its receipt
 * verified under, so a revocation of that key (CCS §14) breaks the chain at that hop.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import type { FailureCode } from "../worker/protocol/codes.js";
import { judgeHop, summaryHash, type ChainSoFar } from "../worker/protocol/chain.js";
import { fromHex } from "../worker/protocol/encoding.js";
import { hasTable } from "./sql.js";

export interface ChainState {
  chain_id: string;
  /** The relying party that appended hop 0; only it may append or read. */
  owner: string;
  total_hops: number;
  tail: string;
  summary_hash: string;
  receipt_hashes: string[];
  /** False once a key that signed one of its hops is revoked (CCS §14): the chain is broken there. */
  chain_valid: boolean;
  broken_at_hop: number | null;
  /** The revoked key that broke it, at its first hop signed by that key. */
  revoked: RevokedHop | null;
}

/** The first hop of a chain signed by a key since revoked. */
export interface RevokedHop {
  hop: number;
  fingerprint: string;
  revoked_at: number;
}

/** A hop of a live chain signed by a key since revoked. */
export interface WithdrawnHop extends RevokedHop {
  receipt_hash: string;
}

/** What an append is judged against: the chain so far and its owner. */
export interface HeldChain extends ChainSoFar {
  owner: string;
}

/** The chain as the route judges an append against it before any nonce is claimed: also where a revocation broke it. */
export interface LookedChain extends HeldChain {
  /** The first hop signed by a key since revoked: the chain takes no hop after it. */
  broken: RevokedHop | null;
}

/** A verified kept hop, as the route hands it over. */
export interface LiveHop {
  hop_count: number;
  previous_receipt_hash: string | null;
  runtime_context?: unknown;
  receipt_hash: string;
  trace_id: string;
  /** Fingerprint of the pinned key its receipt verified under. */
  key_fingerprint: string;
}

export type AppendResult =
  | { kind: "appended"; state: ChainState }
  | { kind: "not-owned"; owner: string }
  | { kind: "conflict"; code: FailureCode; detail: string; state: ChainState | null };

export class EvidenceChain extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private created = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
  }

  /** Whether the first append has created the tables; a read-only look at the schema. */
  private exists(): boolean {
    if (!this.created && hasTable(this.sql, "chain_owner")) {
      this.created = true;
      // Chains appended before hops recorded their signing key gain the column (those hops carry none).
      const columns = this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('chain_hops')").toArray().map((c) => c.name);
      if (!columns.includes("key_fingerprint")) this.sql.exec("ALTER TABLE chain_hops ADD COLUMN key_fingerprint TEXT");
    }
    return this.created;
  }

  /** The revoked keys this chain was told of; none before the first withdrawal (nothing is created to read it). */
  private withdrawals(): Map<string, number> {
    if (!hasTable(this.sql, "chain_withdrawals")) return new Map();
    return new Map(this.sql.exec<{ fingerprint: string; revoked_at: number }>("SELECT fingerprint, revoked_at FROM chain_withdrawals").toArray().map((r) => [r.fingerprint, r.revoked_at]));
  }

  /** The first hop signed by a revoked key, or null. */
  private revokedHop(): RevokedHop | null {
    const first = this.withdrawnHops()[0];
    return first ? { hop: first.hop, fingerprint: first.fingerprint, revoked_at: first.revoked_at } : null;
  }

  private held(): HeldChain | null {
    if (!this.exists()) return null;
    const owner = this.sql.exec<{ owner: string }>("SELECT owner FROM chain_owner WHERE id = 1").toArray()[0]?.owner;
    if (owner === undefined) return null;
    const rows = this.sql.exec<{ receipt_hash: string; trace_id: string }>("SELECT receipt_hash, trace_id FROM chain_hops ORDER BY hop").toArray();
    return { owner, hashes: rows.map((r) => r.receipt_hash), previousTraceId: rows.at(-1)?.trace_id ?? null };
  }

  private async state(chainId: string, held: HeldChain): Promise<ChainState> {
    const revoked = this.revokedHop();
    return {
      chain_id: chainId,
      owner: held.owner,
      total_hops: held.hashes.length,
      tail: held.hashes.at(-1)!,
      summary_hash: await summaryHash(held.hashes.map((h) => fromHex(h.slice(7))!)),
      receipt_hashes: held.hashes,
      chain_valid: revoked === null,
      broken_at_hop: revoked?.hop ?? null,
      revoked,
    };
  }

  /**
   * CCS §14: a key that signed evidence here has been revoked. Recorded in one transaction, so an
   * append that lands later with that key is judged against it; answers the hop the chain is now
   * broken at (null when no hop held so far is that key's) and every hop the key signed, in hop
   * order. Idempotent: the first revoked_at stays.
   */
  withdraw(fingerprint: string, revokedAt: number): { broken_at_hop: number | null; hops: WithdrawnHop[] } {
    return this.ctx.storage.transactionSync(() => {
      this.sql.exec("CREATE TABLE IF NOT EXISTS chain_withdrawals (fingerprint TEXT PRIMARY KEY, revoked_at REAL NOT NULL) WITHOUT ROWID");
      this.sql.exec("INSERT INTO chain_withdrawals (fingerprint, revoked_at) VALUES (?, ?) ON CONFLICT DO NOTHING", fingerprint, revokedAt);
      const hops = this.withdrawnHops().filter((h) => h.fingerprint === fingerprint);
      return { broken_at_hop: hops[0]?.hop ?? null, hops };
    });
  }

  /** The first hop signed by `fingerprint`, or null. */
  private firstHopOf(fingerprint: string): number | null {
    if (!this.exists()) return null;
    return this.sql.exec<{ hop: number }>("SELECT MIN(hop) AS hop FROM chain_hops WHERE key_fingerprint = ?", fingerprint).one().hop ?? null;
  }

  /** What a revocation of `fingerprint` did to this chain: the first hop it signed, or null. */
  brokenBy(fingerprint: string): { broken_at_hop: number | null } {
    return { broken_at_hop: this.withdrawals().has(fingerprint) ? this.firstHopOf(fingerprint) : null };
  }

  /** Every hop signed by a key since revoked, in hop order: none of them a seal vouches for. */
  withdrawnHops(): WithdrawnHop[] {
    const withdrawn = this.withdrawals();
    if (withdrawn.size === 0 || !this.exists()) return [];
    const rows = this.sql.exec<{ hop: number; receipt_hash: string; key_fingerprint: string | null }>("SELECT hop, receipt_hash, key_fingerprint FROM chain_hops ORDER BY hop").toArray();
    return rows.flatMap(({ hop, receipt_hash, key_fingerprint }) =>
      key_fingerprint !== null && withdrawn.has(key_fingerprint) ? [{ hop, receipt_hash, fingerprint: key_fingerprint, revoked_at: withdrawn.get(key_fingerprint)! }] : [],
    );
  }

  /**
   * The chain as an append is judged against (before its receipt is verified, so before its nonce
   * is claimed), with the revocation that broke it, if any; null before hop 0.
   */
  look(): LookedChain | null {
    const held = this.held();
    return held ? { ...held, broken: this.revokedHop() } : null;
  }

  /** The chain, or null before its first hop. */
  async read(chainId: string): Promise<ChainState | null> {
    const held = this.held();
    return held ? this.state(chainId, held) : null;
  }

  /**
   * Appends `hop` for `owner` if the chain is the owner's (or new) and the hop rule takes it as the
   * next hop. A `retry` (an Idempotency-Key retry of the call that claimed the hop's nonce) whose
   * receipt is already at that hop is answered as appended, writing nothing.
   */
  async append(chainId: string, owner: string, hop: LiveHop, retry = false): Promise<AppendResult> {
    const verdict = this.ctx.storage.transactionSync(() => {
      const held = this.held();
      if (held && held.owner !== owner) return { kind: "not-owned" as const, owner: held.owner };
      const before: HeldChain = held ?? { owner, hashes: [], previousTraceId: null };
      // A chain broken by a revoked key stays broken: nothing is appended after the break.
      const broken = this.revokedHop();
      if (broken) return { kind: "conflict" as const, code: "CHAIN_BROKEN" as FailureCode, detail: `the chain is broken at hop ${broken.hop}: the key that signed it was revoked`, held };
      const revokedAt = this.withdrawals().get(hop.key_fingerprint);
      if (revokedAt !== undefined) return { kind: "conflict" as const, code: "ANCHOR_REVOKED" as FailureCode, detail: "the key that signed this hop's receipt has been revoked", held };
      if (retry && held?.hashes[hop.hop_count] === hop.receipt_hash) return { kind: "appended" as const, held };
      const [refused] = judgeHop({ pruned: false, ...hop }, before, false).failures;
      if (refused) return { kind: "conflict" as const, code: refused.code, detail: refused.detail, held };
      if (!held) {
        this.sql.exec(`
          CREATE TABLE IF NOT EXISTS chain_owner (id INTEGER PRIMARY KEY CHECK (id = 1), owner TEXT NOT NULL);
          CREATE TABLE IF NOT EXISTS chain_hops (hop INTEGER PRIMARY KEY, receipt_hash TEXT NOT NULL UNIQUE, trace_id TEXT NOT NULL, key_fingerprint TEXT);
        `);
        this.sql.exec("INSERT INTO chain_owner (id, owner) VALUES (1, ?)", owner);
      }
      this.sql.exec("INSERT INTO chain_hops (hop, receipt_hash, trace_id, key_fingerprint) VALUES (?, ?, ?, ?)", hop.hop_count, hop.receipt_hash, hop.trace_id, hop.key_fingerprint);
      return { kind: "appended" as const, held: { owner, hashes: [...before.hashes, hop.receipt_hash], previousTraceId: hop.trace_id } };
    });
    if (verdict.kind === "not-owned") return verdict;
    if (verdict.kind === "conflict") return { kind: "conflict", code: verdict.code, detail: verdict.detail, state: verdict.held ? await this.state(chainId, verdict.held) : null };
    return { kind: "appended", state: await this.state(chainId, verdict.held) };
  }
}

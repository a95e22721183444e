/**
 * EvidenceChain: one live chain of custody, owned by the relying party that appended its hop 0.
 * An append is judged by the chain's own hop rule (`judgeHop`, the offline verifier's) and
 * written in one synchronous transaction, so of two competing appends of hop n exactly one wins
 * and the chain never forks; anything refused leaves it unchanged. Nothing is stored before the
 * first append: the tables are created by it, and a read of an unknown chain writes nothing. The
 * route addresses an object only for a chain in the registry (KV `chain:<chain_id>`) or for a new
 * chain's hop 0 whose receipt has verified; the registry may lag, so ownership is judged here
 * again, in the append's transaction.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import type { FailureCode } from "../worker/protocol/codes.js";
import { judgeHop, summaryHash, type ChainSoFar } from "../worker/protocol/chain.js";
import { fromHex } from "../worker/protocol/encoding.js";

export interface ChainState {
  chain_id: string;
  /** The relying party that appended hop 0; only it may append or read. */
  owner: string;
  total_hops: number;
  tail: string;
  summary_hash: string;
  receipt_hashes: string[];
}

/** What an append is judged against: the chain so far and its owner. */
export interface HeldChain extends ChainSoFar {
  owner: string;
}

/** A verified kept hop, as the route hands it over. */
export interface LiveHop {
  hop_count: number;
  previous_receipt_hash: string | null;
  runtime_context?: unknown;
  receipt_hash: string;
  trace_id: string;
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
    this.created ||= this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chain_owner'").toArray().length > 0;
    return this.created;
  }

  private held(): HeldChain | null {
    if (!this.exists()) return null;
    const owner = this.sql.exec<{ owner: string }>("SELECT owner FROM chain_owner WHERE id = 1").toArray()[0]?.owner;
    if (owner === undefined) return null;
    const rows = this.sql.exec<{ receipt_hash: string; trace_id: string }>("SELECT receipt_hash, trace_id FROM chain_hops ORDER BY hop").toArray();
    return { owner, hashes: rows.map((r) => r.receipt_hash), previousTraceId: rows.at(-1)?.trace_id ?? null };
  }

  private async state(chainId: string, held: HeldChain): Promise<ChainState> {
    return {
      chain_id: chainId,
      owner: held.owner,
      total_hops: held.hashes.length,
      tail: held.hashes.at(-1)!,
      summary_hash: await summaryHash(held.hashes.map((h) => fromHex(h.slice(7))!)),
      receipt_hashes: held.hashes,
    };
  }

  /** The chain as an append is judged against (before its receipt is verified), or null before hop 0. */
  look(): HeldChain | null {
    return this.held();
  }

  /** The chain, or null before its first hop. */
  async read(chainId: string): Promise<ChainState | null> {
    const held = this.held();
    return held ? this.state(chainId, held) : null;
  }

  /** Appends `hop` for `owner` if the chain is the owner's (or new) and the hop rule takes it as the next hop. */
  async append(chainId: string, owner: string, hop: LiveHop): Promise<AppendResult> {
    const verdict = this.ctx.storage.transactionSync(() => {
      const held = this.held();
      if (held && held.owner !== owner) return { kind: "not-owned" as const, owner: held.owner };
      const before: HeldChain = held ?? { owner, hashes: [], previousTraceId: null };
      const [refused] = judgeHop({ pruned: false, ...hop }, before, false).failures;
      if (refused) return { kind: "conflict" as const, code: refused.code, detail: refused.detail, held };
      if (!held) {
        this.sql.exec(`
          CREATE TABLE IF NOT EXISTS chain_owner (id INTEGER PRIMARY KEY CHECK (id = 1), owner TEXT NOT NULL);
          CREATE TABLE IF NOT EXISTS chain_hops (hop INTEGER PRIMARY KEY, receipt_hash TEXT NOT NULL UNIQUE, trace_id TEXT NOT NULL);
        `);
        this.sql.exec("INSERT INTO chain_owner (id, owner) VALUES (1, ?)", owner);
      }
      this.sql.exec("INSERT INTO chain_hops (hop, receipt_hash, trace_id) VALUES (?, ?, ?)", hop.hop_count, hop.receipt_hash, hop.trace_id);
      return { kind: "appended" as const, held: { owner, hashes: [...before.hashes, hop.receipt_hash], previousTraceId: hop.trace_id } };
    });
    if (verdict.kind === "not-owned") return verdict;
    if (verdict.kind === "conflict") return { kind: "conflict", code: verdict.code, detail: verdict.detail, state: verdict.held ? await this.state(chainId, verdict.held) : null };
    return { kind: "appended", state: await this.state(chainId, verdict.held) };
  }
}

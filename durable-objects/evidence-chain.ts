/**
 * EvidenceChain: one live chain of custody. Appends are checked and written in one synchronous
 * transaction, so of two competing appends of hop n exactly one wins and the chain never forks;
 * anything refused leaves it unchanged.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { MAX_CHAIN_HOPS, summaryHash } from "../worker/protocol/chain.js";
import { fromHex } from "../worker/protocol/encoding.js";

export interface ChainState {
  chain_id: string;
  total_hops: number;
  tail: string | null;
  summary_hash: string;
  receipt_hashes: string[];
}

export type AppendResult =
  | { kind: "appended"; state: ChainState }
  | { kind: "conflict"; code: "CHAIN_BROKEN" | "HOP_LIMIT_EXCEEDED"; detail: string; state: ChainState };

export class EvidenceChain extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS hops (hop INTEGER PRIMARY KEY, receipt_hash TEXT NOT NULL)");
  }

  private hashes(): string[] {
    return this.sql.exec<{ receipt_hash: string }>("SELECT receipt_hash FROM hops ORDER BY hop").toArray().map((r) => r.receipt_hash);
  }

  private async state(chainId: string, hashes: string[]): Promise<ChainState> {
    return {
      chain_id: chainId,
      total_hops: hashes.length,
      tail: hashes.at(-1) ?? null,
      summary_hash: await summaryHash(hashes.map((h) => fromHex(h.slice(7))!)),
      receipt_hashes: hashes,
    };
  }

  /** The chain, or null before its first hop. */
  async read(chainId: string): Promise<ChainState | null> {
    const hashes = this.hashes();
    return hashes.length ? this.state(chainId, hashes) : null;
  }

  /** Appends hop `hopCount` if it is the next hop and `previous` is the current tail (none for hop 0). */
  async append(chainId: string, hopCount: number, previous: string | null, receiptHash: string): Promise<AppendResult> {
    const verdict = this.ctx.storage.transactionSync(() => {
      const hashes = this.hashes();
      const tail = hashes.at(-1) ?? null;
      if (hopCount !== hashes.length) return { code: "CHAIN_BROKEN" as const, detail: `the chain has ${hashes.length} hops: the next is hop ${hashes.length}, not ${hopCount}`, hashes };
      if (hopCount >= MAX_CHAIN_HOPS) return { code: "HOP_LIMIT_EXCEEDED" as const, detail: `a chain holds at most ${MAX_CHAIN_HOPS} hops`, hashes };
      if (previous !== tail) {
        const detail = tail === null ? "hop 0 has no predecessor" : "previous_receipt_hash is not the chain's tail";
        return { code: "CHAIN_BROKEN" as const, detail, hashes };
      }
      if (hashes.includes(receiptHash)) return { code: "CHAIN_BROKEN" as const, detail: "this receipt is already in the chain", hashes };
      this.sql.exec("INSERT INTO hops (hop, receipt_hash) VALUES (?, ?)", hopCount, receiptHash);
      return { code: null, detail: "", hashes: [...hashes, receiptHash] };
    });
    const state = await this.state(chainId, verdict.hashes);
    return verdict.code === null ? { kind: "appended", state } : { kind: "conflict", code: verdict.code, detail: verdict.detail, state };
  }
}

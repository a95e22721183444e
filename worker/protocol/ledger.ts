/**
 * The replay-state port of step 3 (revocation) and step 4 (nonce, sequence). The Worker's
 * adapter is the IssuerLedger Durable Object; tests and the CLI may supply their own.
 */
import type { FailureCode } from "./codes.js";

export interface LedgerQuery {
  issuer: string;
  nonce: string;
  sequence: number;
  /** The pinned key the signature verified under; null when it did not verify. */
  kid: string | null;
}

export interface ClaimQuery extends LedgerQuery {
  /** Unix seconds until which the nonce must be remembered: expires_at + granted skew. */
  retainUntil: number;
  /** Warning codes of this decision, counted with it. */
  warnings: FailureCode[];
}

export interface LedgerAnswer {
  revoked: boolean;
  /** Why this is a replay (nonce seen, sequence repeated or too old), or null. */
  replay: string | null;
  /** True only when this call claimed the nonce and advanced the window. */
  consumed: boolean;
}

export interface ReplayLedger {
  /** Atomically: refuse a revoked kid, claim the nonce, admit the sequence; all or nothing. */
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  /** The same checks, read-only. */
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
}

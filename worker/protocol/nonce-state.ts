/**
 * What an audit may tell of a receipt's nonce: its state in the issuer's ledger (consumed:
 * REPLAY_DETECTED; withdrawn by a revocation, CCS §14: RECEIPT_WITHDRAWN) is told only for a
 * receipt its issuer signed and addressed to the caller. Otherwise any relying party could ask,
 * in audit mode or through a chain document, whether another party's receipt was presented or
 * withdrawn (its own audience: AUDIENCE_MISMATCH), or whether any nonce was (a forged receipt
 * carrying that nonce: SIGNATURE_INVALID, no kid). Such a decision is already invalid by a
 * critical failure of its own, so dropping the nonce's state changes nothing else of it.
 */
import type { Decision } from "./verify.js";

const NONCE_STATE_CODES = new Set(["REPLAY_DETECTED", "RECEIPT_WITHDRAWN"]);

/** `d` without its nonce's state when it is an audit of a receipt not signed by its issuer or not addressed to the caller. */
export function withoutForeignNonceState<D extends Pick<Decision, "mode" | "kid" | "failures">>(d: D): D {
  if (d.mode !== "audit" || !d.failures.some((f) => NONCE_STATE_CODES.has(f.code))) return d;
  const foreign = d.kid === null || d.failures.some((f) => f.code === "AUDIENCE_MISMATCH");
  return foreign ? { ...d, failures: d.failures.filter((f) => !NONCE_STATE_CODES.has(f.code)) } : d;
}

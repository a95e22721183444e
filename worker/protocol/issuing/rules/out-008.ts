import { checkSignature } from "../../checks/signature.js";
import { canonicalReceipt, parseReceipt } from "../../receipt.js";
import { allow, deny, type OutputRule } from "./types.js";

/** A receipt carried by the output: the content itself, or its `receipt` member. */
function carriedReceipt(content: unknown): unknown {
  if (content === null || typeof content !== "object" || Array.isArray(content)) return undefined;
  const c = content as Record<string, unknown>;
  if (typeof c.signature === "string" && typeof c.issuer === "string") return c;
  return c.receipt !== null && typeof c.receipt === "object" ? c.receipt : undefined;
}

export const OUT_008: OutputRule = {
  name: "OUT-008",
  trigger: "the output carries a signed receipt (itself, or as `receipt`) whose signature does not verify under a pinned key of its issuer",
  scope: "the signature field of a receipt in the output",
  async judge({ output, issuerKeys, verifier }) {
    const carried = carriedReceipt(output.content);
    if (carried === undefined) return allow("no signed receipt in the output");
    const parsed = parseReceipt(carried);
    if (!parsed.ok) return deny("OUT-008: the output carries a malformed receipt");
    const r = parsed.receipt;
    // The carried receipt's key is judged at its own issued_at: this is its signature, not its freshness.
    const check = await checkSignature(r, canonicalReceipt(r).signedBytes, await issuerKeys(r.issuer), verifier, r.issued_at);
    return check.kid !== null ? allow(`signed by ${r.issuer}`) : deny(`OUT-008: ${check.failures[0].code}`);
  },
};

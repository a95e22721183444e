import { allow, deny, type OutputRule } from "./types.js";

/** Every `previous_receipt_hash` value inside a JSON value. */
export function chainLinksIn(value: unknown, depth = 0): unknown[] {
  if (value === null || typeof value !== "object" || depth > 64) return [];
  const out: unknown[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (k === "previous_receipt_hash") out.push(v);
    out.push(...chainLinksIn(v, depth + 1));
  }
  return out;
}

export const OUT_006: OutputRule = {
  name: "OUT-006",
  trigger: "the output carries a previous_receipt_hash (a chain link) that is not the receipt_hash of the admission receipt it answers",
  scope: "output of any tool",
  judge({ output, admissionReceiptHash }) {
    const bad = chainLinksIn(output.content).find((link) => link !== admissionReceiptHash);
    return bad === undefined ? allow() : deny("OUT-006: the output's chain link does not name this invocation's receipt");
  },
};

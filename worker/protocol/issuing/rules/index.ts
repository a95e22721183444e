/**
 * The rule set, in its registered order: the eight input rules judged at intake and the eight
 * output rules judged at finalisation (CCS Appendix E). The canonical configuration lists these
 * names; `rule_summary` reports them in the same order.
 */
import { OUT_001 } from "./out-001.js";
import { OUT_002 } from "./out-002.js";
import { OUT_003 } from "./out-003.js";
import { OUT_004 } from "./out-004.js";
import { OUT_005 } from "./out-005.js";
import { OUT_006 } from "./out-006.js";
import { OUT_007 } from "./out-007.js";
import { OUT_008 } from "./out-008.js";
import { SEC_001 } from "./sec-001.js";
import { SEC_002 } from "./sec-002.js";
import { SEC_003 } from "./sec-003.js";
import { SEC_004 } from "./sec-004.js";
import { SEC_005 } from "./sec-005.js";
import { SEC_006 } from "./sec-006.js";
import { SEC_007 } from "./sec-007.js";
import { SEC_008 } from "./sec-008.js";
import { ShellTooComplex, withShellWork } from "../shell.js";
import type { InputRule, OutputRule, RuleResult, RuleVerdict } from "./types.js";

export const INPUT_RULES: readonly InputRule[] = [SEC_001, SEC_002, SEC_003, SEC_004, SEC_005, SEC_006, SEC_007, SEC_008];
export const OUTPUT_RULES: readonly OutputRule[] = [OUT_001, OUT_002, OUT_003, OUT_004, OUT_005, OUT_006, OUT_007, OUT_008];
export const RULE_NAMES: readonly string[] = [...INPUT_RULES, ...OUTPUT_RULES].map((r) => r.name);

/**
 * Runs `rules` in order; every rule runs, so the summary is complete even after a deny. A rule
 * that cannot read a command line within its work bound (ShellTooComplex) denies: fail closed.
 * The bound is per rule and Command: its lines share one SHELL_WORK_BASE (withShellWork).
 */
export async function judge<C>(rules: readonly { name: string; judge(c: C): unknown }[], context: C): Promise<RuleResult[]> {
  const out: RuleResult[] = [];
  for (const rule of rules) {
    let o: Omit<RuleResult, "name">;
    try {
      // One work base for every command line the rule reads in this Command (see withShellWork).
      o = (await withShellWork(() => rule.judge(context))) as Omit<RuleResult, "name">;
    } catch (err) {
      if (!(err instanceof ShellTooComplex)) throw err;
      o = { verdict: "deny", reason: `${rule.name}: ${err.message}` };
    }
    out.push({ name: rule.name, verdict: o.verdict, reason: boundedReason(o.reason) });
  }
  return out;
}

/**
 * The most UTF-16 code units of one rule's reason a receipt carries. A reason may quote what the
 * rule found (SEC-004's target, SEC-001's host, OUT-007's outcome_status), and the receipt, its
 * block_reason and the rules' reasons together must fit the journal's record (32 KB): a read_file
 * of `/tmp/../etc/` and 40,000 letters was denied with a reason of 40 KB and answered 500, no
 * receipt (review rv-54). A longer reason is cut there (never inside a surrogate pair) and ends in `…`.
 */
export const MAX_REASON_LENGTH = 512;
export function boundedReason(reason: string): string {
  if (reason.length <= MAX_REASON_LENGTH) return reason;
  let end = MAX_REASON_LENGTH - 1;
  const last = reason.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return reason.slice(0, end) + "…";
}

/** Any deny wins; else any escalate; else allow. block_reason joins the reasons of the winning verdict. */
export function combine(results: readonly RuleResult[]): { verdict: RuleVerdict; block_reason: string } {
  for (const verdict of ["deny", "escalate"] as const) {
    const hits = results.filter((r) => r.verdict === verdict);
    if (hits.length > 0) return { verdict, block_reason: hits.map((r) => r.reason || `${r.name}: ${verdict}`).join("; ") };
  }
  return { verdict: "allow", block_reason: "" };
}

/** `name=verdict` pairs joined by `|`. */
export const ruleSummary = (results: readonly RuleResult[]): string => results.map((r) => `${r.name}=${r.verdict}`).join("|");

export type { InputRule, OutputRule, RuleResult, RuleVerdict } from "./types.js";

/**
 * SEC-002 joins argv-shaped arguments into command lines: each program key with each arguments key
 * of the same object. Keys are matched in any case, so one object could hold hundreds of each
 * (`Executable`, `eXecutable`, …, `Parameters`, `pArameters`, …) and make their product of lines,
 * each parsed: 500 × 500 keys (49 KB) held an intake 2.3 s, 1,000 × 1,000 (58 KB) 4.8 s (review
 * rv-54). The joined lines are now bounded by SHELL_WORK_PER_CHAR a character of the arguments
 * plus SHELL_WORK_BASE; past it the rule denies, unjudged (fail closed).
 */
import { describe, expect, it } from "vitest";
import { INPUT_RULES, judge } from "../../worker/protocol/issuing/rules/index.js";
import { commandLines } from "../../worker/protocol/issuing/rules/types.js";

const HASH = "sha256:" + "a".repeat(64);
const sec002 = async (params: Record<string, unknown>) =>
  (await judge(INPUT_RULES as never, { command: { intake_version: "1.3", agent_id: "a", tool: "bash", params, timestamp: 1, trace_id: "0123456789abcdef" }, requestHash: HASH, humanApproval: null, configHash: HASH, pinnedConfigHashes: null } as never)).find((r) => r.name === "SEC-002")!;

/** The first `n` spellings of `word` in mixed case. */
function spellings(word: string, n: number): string[] {
  const out: string[] = [];
  for (let bits = 0; bits < 2 ** word.length && out.length < n; bits++) out.push([...word].map((c, i) => ((bits >> i) & 1 ? c.toUpperCase() : c)).join(""));
  return out;
}

describe("argv-shaped arguments joined in bounded work", () => {
  it("denies, quickly, an object whose program and arguments keys would join into their product of lines", async () => {
    const params: Record<string, string> = {};
    for (const k of spellings("executable", 500)) params[k] = "ls";
    for (const k of spellings("parameters", 500)) params[k] = "x".repeat(60);
    // The test's timeout is the bound (no timed assertion).
    const result = await sec002(params);
    expect(result.verdict).toBe("deny");
    expect(result.reason).toMatch(/joined command lines pass 16 characters a character/);
  }, 30_000);

  it("joins ordinary argv-shaped arguments as before", async () => {
    expect((await sec002({ command: "rm", flags: "-rf", path: "/" })).verdict).toBe("deny");
    expect((await sec002({ cmd: "rm", args: ["-rf", "/"] })).verdict).toBe("deny");
    expect((await sec002({ Program: "rm", ARGV: ["-r", "-f"], Targets: ["/tmp/x", "/"] })).verdict).toBe("deny");
    expect((await sec002({ command: "ls", args: ["-la", "/tmp"] })).verdict).toBe("allow");
    expect(commandLines({ command: "rm", flags: "-rf", path: "/" })).toEqual(["command", "rm", "flags", "-rf", "path", "/", "rm -rf", "rm /", "rm -rf /"]);
  });
});

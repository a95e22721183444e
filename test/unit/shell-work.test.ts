/**
 * Reading a command line is bounded: nested process substitutions (`<(<(<(…`) made the shell
 * reader polynomial of degree ~9 in the line's length, so 3 KB held an intake for more than 15 s.
 * Past SHELL_WORK_PER_CHAR reads a character the line is not judged, and every rule that reads it
 * denies (fail closed); ordinary lines, nested substitutions included, stay well inside the bound.
 */
import { describe, expect, it } from "vitest";
import { INPUT_RULES, judge } from "../../worker/protocol/issuing/rules/index.js";
import { braceExpansion, parseShell, SHELL_WORK_BASE, SHELL_WORK_PER_CHAR, ShellTooComplex } from "../../worker/protocol/issuing/shell.js";
import { seeded } from "../support/seeded.js";

const HASH = "sha256:" + "a".repeat(64);
const context = (tool: string, params: Record<string, unknown>) => ({
  command: { intake_version: "1.3", agent_id: "a", tool, params, timestamp: 1, trace_id: "0123456789abcdef" },
  requestHash: HASH, humanApproval: null, configHash: HASH, pinnedConfigHashes: null,
});
const denials = async (tool: string, params: Record<string, unknown>) =>
  (await judge(INPUT_RULES as never, context(tool, params) as never)).filter((r) => r.verdict === "deny");

describe("the shell reader's work bound", () => {
  it("refuses nested process substitutions past the bound, and each rule that reads the line denies", async () => {
    expect(() => parseShell("<(".repeat(1_500))).toThrow(ShellTooComplex);
    const refused = await denials("bash", { command: "<(".repeat(1_500) });
    expect(refused.map((r) => r.name)).toEqual(["SEC-001", "SEC-002", "SEC-004", "SEC-006"]);
    for (const r of refused) expect(r.reason).toMatch(new RegExp(`^${r.name}: a command line of 3000 characters whose reading passes ${SHELL_WORK_PER_CHAR} reads`));
    // Any tool's string argument is read as a command line by SEC-004: a file's content too.
    expect((await denials("write_file", { path: "a", content: "<(".repeat(30_000) })).map((r) => r.name)).toEqual(["SEC-004"]);
  });

  it("leaves the reader usable after a refusal, and reads ordinary lines as before", async () => {
    expect(() => parseShell("<(".repeat(1_500))).toThrow(ShellTooComplex);
    expect(parseShell("diff <(sort a) <(sort b)").commands.map((c) => c.words[0])).toEqual(["diff", "sort", "sort"]);
    for (const command of ["diff <(sort a) <(sort b) | head", "cat <(cat <(cat <(cat <(cat <(cat <(cat <(echo hi)))))))", "x=$(echo $(echo $(echo $(echo $(echo $(echo hi))))))", "bash -c 'sh -c \"echo hi\"'"]) {
      expect(await denials("bash", { command }), command).not.toContainEqual(expect.objectContaining({ reason: expect.stringMatching(/reading passes/) }));
    }
    // A long ordinary line is read whole: the bound grows with the line.
    expect(() => parseShell("echo $(echo $(echo hi)) <(sort a); ".repeat(1_500))).not.toThrow();
    expect(SHELL_WORK_BASE).toBeGreaterThan(0);
  });

  it("shares one base among the lines a rule reads in one Command (1,000 short nested lines took 6.2 s, each within its own base)", async () => {
    const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const lines = Array.from({ length: 1_000 }, (_, i) => "<(".repeat(14) + letters[i % 62] + letters[Math.floor(i / 62)]);
    expect(() => parseShell(lines[0])).not.toThrow();
    const refused = await denials("read_file", { path: "/tmp/x", more: lines });
    expect(refused.map((r) => r.name)).toEqual(["SEC-004"]);
    expect(refused[0].reason).toMatch(/^SEC-004: a command line of 30 characters whose reading passes/);
    // Ordinary lines, many of them, stay inside the shared base.
    expect(await denials("bash", { command: "cat <(cat <(cat <(cat <(cat <(cat <(cat <(echo hi)))))))", more: Array.from({ length: 2_000 }, (_, i) => `diff <(sort a${i}) <(sort b)`) })).toEqual([]);
  });
});

describe("brace expansion under the work bound", () => {
  it("counts the words an expansion makes (a long prefix and 10,000 alternatives made 200 M characters of words: 0.95 s, 7.5 s with a CJK host)", async () => {
    // Ordinary expansions are read as before.
    expect(parseShell("cp file{,.bak} && echo {a,b,c}x").commands.map((c) => c.words)).toEqual([["cp", "file", "file.bak"], ["echo", "ax", "bx", "cx"]]);
    expect(parseShell("echo " + "{a,b}".repeat(1) + "a".repeat(10_000)).commands[0].words).toHaveLength(3);
    const line = "HTTPS://x" + "a".repeat(20_000) + "{" + "1,".repeat(10_000) + "2} ";
    expect(() => parseShell(line)).toThrow(ShellTooComplex);
    const refused = await denials("bash", { command: line });
    expect(refused.map((r) => r.name)).toEqual(["SEC-001", "SEC-002", "SEC-004", "SEC-006"]);
    // Any tool's argument is read as a command line by SEC-004.
    expect((await denials("read_file", { path: "/tmp/x", more: line })).map((r) => r.name)).toEqual(["SEC-004"]);
  });
});

describe("finding a brace expansion in a word", () => {
  const EXPRESSION = /^([^{}]*?)(?<!\$)\{([^{}]*,[^{}]*)\}([^{}]*)$/;
  it("finds what the expression it replaces matched (60,000 seeded random words)", () => {
    const { text } = seeded(7);
    const alphabet = [..."{},$ab\u0001"];
    for (let i = 0; i < 60_000; i++) {
      const word = text(alphabet, 12);
      const m = EXPRESSION.exec(word);
      expect(braceExpansion(word), JSON.stringify(word)).toEqual(m ? { open: m[1].length, close: m[1].length + 1 + m[2].length } : null);
    }
  });

  it("reads a word of many commas between braces in linear time (1.3 s a reading, 6.1 s an intake before)", async () => {
    const word = "{" + ",".repeat(60_000) + "}{";
    expect(braceExpansion(word)).toBeNull();
    expect(parseShell(word).commands[0].words).toEqual([word]);
    expect((await denials("bash", { command: word })).length).toBe(0);
  });
});

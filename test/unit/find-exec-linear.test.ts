/**
 * SEC-002 reads a `find`'s actions in linear time. Each `-exec`/`-execdir`/`-ok`/`-okdir` had the
 * rest of the line copied, its `;` or `+` looked for, and its command read to the end by
 * invocationOf: `find .` and 15,000 `-ok` took 4.4 s an intake, `-ok sudo` × 7,000 6 s in-process
 * (a wrapper's options are read to the end of the line from every action). Now the ends are found
 * once and the program is read by programAt with one memo for the line.
 */
import { describe, expect, it } from "vitest";
import { invocationOf, programAt, type ProgramFound } from "../../worker/protocol/issuing/shell.js";
import { INPUT_RULES, judge } from "../../worker/protocol/issuing/rules/index.js";
import { seeded } from "../support/seeded.js";

const HASH = "sha256:" + "a".repeat(64);
const judged = async (tool: string, params: Record<string, unknown>) =>
  judge(INPUT_RULES as never, { command: { intake_version: "1.3", agent_id: "a", tool, params, timestamp: 1, trace_id: "0123456789abcdef" }, requestHash: HASH, humanApproval: null, configHash: HASH, pinnedConfigHashes: null } as never);

const { next } = seeded(47);
const command = (words: string[]) => ({ words, substitutions: [], heredocs: [], herestrings: [], pipesInto: false, chained: false, scripts: [], unread: 0 });

describe("find actions read in linear time", () => {
  it("find each action's program as invocationOf on the copied words did (60,000 seeded random lines)", () => {
    const alphabet = ["-exec", "-ok", "-execdir", "rm", "/bin/rm", "sudo", "env", "-u", "-nu", "root", "x", ";", "+", "--", "A=1", "<", ">", "2>", "xargs", "timeout", "5", "{", "!", "nice", "-n"];
    for (let i = 0; i < 60_000; i++) {
      const argv = Array.from({ length: Math.floor(next() * 14) }, () => alphabet[Math.floor(next() * alphabet.length)]);
      const memo = new Map<string, ProgramFound>();
      for (let k = 0; k < argv.length; k++) {
        const rest = argv.slice(k + 1);
        const stop = rest.findIndex((w) => w === ";" || w === "+");
        const words = stop < 0 ? rest : rest.slice(0, stop);
        const before = invocationOf(command(words));
        const after = programAt(argv, k + 1, stop < 0 ? argv.length : k + 1 + stop, memo);
        expect(after && { name: after.name, at: after.at - (k + 1), viaXargs: after.viaXargs }, JSON.stringify([argv, k])).toEqual(before && { name: before.name, at: before.at, viaXargs: before.viaXargs });
      }
    }
  }, 120_000);

  it("judges many actions quickly (4.4 s an intake before), and a deleting find as before", async () => {
    await judged("run_shell", { command: "find . " + "-ok ".repeat(15_000) });
    await judged("run_shell", { command: "find . " + "-ok sudo ".repeat(7_000) });
    const verdict = async (c: string) => (await judged("run_shell", { command: c })).find((r) => r.name === "SEC-002")?.verdict;
    expect(await verdict("find / -exec sudo -u root rm -rf {} +")).toBe("deny");
    expect(await verdict("find /tmp/x -exec echo {} \\;")).toBe("allow");
  }, 60_000);

  it("reads a find run by a find's action in the same pass: no copy, no recursion a level (review rv-54: 5,500 levels overflowed the stack, 500)", async () => {
    const verdict = async (c: string) => (await judged("run_shell", { command: c })).find((r) => r.name === "SEC-002")?.verdict;
    const nested = "find / " + "-exec find ".repeat(6_000);
    // The test's timeout bounds the time (no timed assertion; a stack overflow was the failure).
    expect(await verdict(nested + ";")).toBe("allow");
    expect(await verdict(nested + "-exec sh -c 'rm -rf /' \\;")).toBe("deny");
    // What a nested find hands a shell is read as before, and the outer find's later actions too.
    expect(await verdict("find / -exec find /tmp -name x -exec sh -c 'rm -rf /' \\;")).toBe("deny");
    expect(await verdict("find / -exec find /tmp -exec echo {} \\; -exec sh -c 'rm -rf /' \\;")).toBe("deny");
    expect(await verdict("find / -exec find /tmp -exec echo {} \\; -exec sh -c 'ls' \\;")).toBe("allow");
  }, 60_000);

  it("judges each action's program word once, however many actions find it past a wrapper's options (review rv-54)", async () => {
    const verdict = async (c: string) => (await judged("run_shell", { command: c })).find((r) => r.name === "SEC-002")?.verdict;
    // The test's timeout is the bound, no timed assertion: read once a word, these take a few seconds at
    // most; read again from every action (as before 0.2.17), 7,000 took 6 s, so 20,000 nearly a minute.
    expect(await verdict("find / " + "-ok sudo ".repeat(20_000) + "x$a".repeat(5_000) + " ;")).toBe("allow");
    expect(await verdict("find / " + "-ok sudo ".repeat(20_000) + "r${x}m" + " ;")).toBe("escalate");
  }, 30_000);
});


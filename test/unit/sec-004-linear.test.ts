/**
 * SEC-004 judges what follows each `=` of a word in one pass (blockedAfterEquals) instead of
 * resolving every such suffix apart, which was quadratic in the word. These tests hold the one-pass
 * judgment to the per-suffix one it replaced, kept here as the reference: the same first blocked
 * target (so the same deny and block_reason) on random words built from the pieces that matter.
 */
import { describe, expect, it } from "vitest";
import { urlHost } from "../../worker/protocol/issuing/hosts.js";
import { parseShell } from "../../worker/protocol/issuing/shell.js";
import { blockedAfterEquals, blockedTraversal, fileUrlPath, isBlockedPath, SEC_004, shellWords, traversalTarget } from "../../worker/protocol/issuing/rules/sec-004.js";

const WORD_BREAK = /\s+|\$\{IFS\}|\$IFS(?![A-Za-z0-9_])|[(){};|&<>,]/;

/** The candidates as SEC-004 listed them before, every `=` suffix sliced out and resolved apart. */
function referenceCandidates(text: string): string[] {
  const out = new Set<string>();
  if (urlHost(text) === null) out.add(text);
  for (const raw of [text, ...text.split(WORD_BREAK), ...shellWords(parseShell(text), [])]) {
    const word = raw.replace(/^['"]+|['"]+$/g, "");
    const local = fileUrlPath(word);
    if (local !== null) out.add(local);
    if (word === "" || urlHost(word) !== null) continue;
    out.add(word);
    const unredirected = word.replace(/^(?:\d*[<>]+&?|[|&(]+)/, "");
    out.add(unredirected);
    for (let at = unredirected.indexOf("="); at >= 0; at = unredirected.indexOf("=", at + 1)) out.add(unredirected.slice(at + 1));
  }
  return [...out];
}

function reference(text: string): string | null {
  for (const path of referenceCandidates(text)) {
    const target = traversalTarget(path);
    if (target !== null && isBlockedPath(target)) return target;
  }
  return null;
}

function referenceAfterEquals(word: string): string | null {
  for (let at = word.indexOf("="); at >= 0; at = word.indexOf("=", at + 1)) {
    const target = traversalTarget(word.slice(at + 1));
    if (target !== null && isBlockedPath(target)) return target;
  }
  return null;
}

/** A seeded generator (mulberry32), so a failure names a case that can be run again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  "=", "=", "=", "/", "/", "/", "..", "..", ".", "a", "x=", "etc", "shadow", "root", ".ssh", ".aws", ".config", "gcloud", "var", "run", "secrets",
  "%2e", "%2E%2e", "%2f", "%5c", "\\", "~", "~/", "$x", "${HOME}", ".$x.", "..$y", "e*", "[e]tc", "?", "--file=", "if=", " ", "'", '"', "<", "2>",
];

/** Fewer pieces, so that `=`, `..` and blocked names meet often. */
const DENSE = ["=", "/", "..", "/..", "/..", "etc", "/etc", "=/", "=..", "a", "./", ".ssh", "~/", "$x", "e*", "x=", "%2e%2e"];

function word(next: () => number, length: number, pieces: readonly string[] = PIECES): string {
  let out = "";
  for (let i = 0; i < length; i++) out += pieces[Math.floor(next() * pieces.length)];
  return out;
}

describe("SEC-004 after each `=`, judged in one pass", () => {
  it("finds the same first blocked target as resolving every `=` suffix apart, on 60,000 seeded random words", () => {
    const next = random(20261130);
    let blocked = 0;
    for (let i = 0; i < 60_000; i++) {
      const w = word(next, 1 + Math.floor(next() * 24), i % 3 === 0 ? PIECES : DENSE);
      const expected = referenceAfterEquals(w);
      if (expected !== null) blocked++;
      expect(blockedAfterEquals(w), JSON.stringify(w)).toBe(expected);
    }
    // The generator reaches blocked targets often enough for the comparison to mean something.
    expect(blocked).toBeGreaterThan(1_500);
  });

  it("judges whole argument strings as before: the same first target, so the same deny and block_reason", () => {
    const next = random(7);
    for (let i = 0; i < 10_000; i++) {
      const text = word(next, 1 + Math.floor(next() * 30), i % 2 === 0 ? PIECES : DENSE);
      expect(blockedTraversal(text), JSON.stringify(text)).toBe(reference(text));
    }
    for (const text of ["cat ../../etc/shadow", "--file=../../../etc/passwd", "if=x=../../root/.ssh/id_rsa", "a=b=./../../etc", "k=~/../../etc/x", "v=%2e%2e/%2e%2e/etc", "=/=/=/../etc", "x=..$y/etc", "p=.ssh/../../x/.ssh"]) {
      expect(blockedTraversal(text), text).toBe(reference(text));
    }
  });

  it("agrees on a richer alphabet: single characters, partial escapes, variables, globs, quotes, separators and file: URLs", () => {
    // Single characters let `=`, `%`, `$`, `~`, `\\` and `.` meet in every order (`%2=e`, `$x=..`, `=~\\..`);
    // the pieces keep blocked names and `..` frequent enough to reach blocked targets.
    const RICH = [
      ..."=/.~$x{}%2e5cfE\\*?[]etcshoa_ '\";|&(,<>",
      "..", "/..", "=..", "=/", "==", "=~/", "etc", "root", ".ssh", ".config/gcloud", "var/run/secrets", "%2e", "%2E%2e", "%2f", "%5c", "${x}", "..$y", ".$x.", "$IFS",
      "file://", "file:///", "http://h.example/", "2>", "--f=", "if=",
    ];
    const next = random(2612);
    let blocked = 0;
    for (let i = 0; i < 40_000; i++) {
      const w = word(next, 1 + Math.floor(next() * (i % 5 === 0 ? 48 : 20)), i % 2 === 0 ? RICH : DENSE);
      const expected = referenceAfterEquals(w);
      if (expected !== null) blocked++;
      expect(blockedAfterEquals(w), JSON.stringify(w)).toBe(expected);
      if (i % 4 === 0) expect(blockedTraversal(w), JSON.stringify(w)).toBe(reference(w));
    }
    expect(blocked).toBeGreaterThan(500);
  });

  it("stays linear on the inputs that were quadratic: many `=` in one word, as Command arguments up to the params limit", () => {
    const denied = ["x=".repeat(20_000) + "../../etc/shadow", "=/..".repeat(15_000) + "=/../etc/passwd", "=/a".repeat(20_000) + "/..".repeat(20_001) + "/etc"];
    for (const text of ["=/".repeat(30_000), "=".repeat(60_000), "=/..".repeat(15_000), "a=http://x.example/ ".repeat(3_000), ...denied]) {
      const command = { intake_version: "1.3", agent_id: "a", tool: "write_file", params: { content: text }, timestamp: 1, trace_id: "0123456789abcdef" };
      const verdict = SEC_004.judge({ command, requestHash: "", humanApproval: null, configHash: "", pinnedConfigHashes: null } as never) as { verdict: string };
      expect(verdict.verdict, text.slice(0, 20)).toBe(denied.includes(text) ? "deny" : "allow");
    }
  });

  it("reads a long glob once for the many `=` that reach it (11 s an intake before)", () => {
    const judged = (content: string) =>
      (SEC_004.judge({ command: { intake_version: "1.3", agent_id: "a", tool: "write_file", params: { content }, timestamp: 1, trace_id: "0123456789abcdef" }, requestHash: "", humanApproval: null, configHash: "", pinnedConfigHashes: null } as never) as { verdict: string }).verdict;
    expect(judged("=".repeat(30_000) + "/../../" + "*".repeat(30_000) + "x")).toBe("allow");
    // The same answers: a glob that reaches a blocked path after the `=` is still found.
    expect(judged("=".repeat(3_000) + "/../../" + "e*c/shadow")).toBe("deny");
    expect(judged("x=".repeat(3_000) + "../../" + "*".repeat(3_000) + "/kubelet")).toBe("deny");
    expect(judged("x=".repeat(3_000) + "../../" + "*".repeat(3_000) + "x/kubelet")).toBe("allow");
  }, 60_000);
});

/**
 * SEC-001's pre-filter before `new URL`: it may only skip texts the WHATWG parser refuses, or a
 * host the parser would extract goes unjudged. Checked against the parser itself over hostile
 * URL spellings and a seeded random corpus biased towards scheme-shaped text.
 */
import { describe, expect, it } from "vitest";
import { MAY_PARSE_AS_URL, urlHosts } from "../../worker/protocol/issuing/hosts.js";

const parses = (text: string): boolean => {
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
};

const HOSTILE = [
  "http://127.0.0.1/",
  "http:\\\\127.0.0.1\\",
  "http:/127.0.0.1",
  "http:127.0.0.1",
  "\u0000\u001f http://127.0.0.1",
  " \thttp://10.0.0.1",
  "h\tt\nt\rp://192.168.0.1",
  "HTTP://[::1]/",
  "x+y-z.w://127.0.0.1",
  "ｈｔｔｐ://127.0.0.1",
  "http：//127.0.0.1",
  "file:///etc/passwd",
  "javascript:alert(1)",
  "a:",
  "1http://127.0.0.1",
  "+http://127.0.0.1",
  "note: hello",
  "//127.0.0.1/",
  "\u00a0http://127.0.0.1",
  "\u200bhttp://127.0.0.1",
];

/** A small deterministic generator (mulberry32), so a failure names a reproducible text. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("SEC-001 host reading: the pre-filter before new URL", () => {
  it("passes every hostile spelling the parser accepts, and the judged hosts are unchanged for them", () => {
    for (const text of HOSTILE) if (parses(text)) expect(MAY_PARSE_AS_URL.test(text), JSON.stringify(text)).toBe(true);
    expect(urlHosts("http:\\\\127.0.0.1\\")).toContain("127.0.0.1");
    expect(urlHosts(" \thttp://10.0.0.1")).toContain("10.0.0.1");
    expect(urlHosts("h\tt\nt\rp://192.168.0.1")).toContain("192.168.0.1");
    expect(urlHosts("ｈｔｔｐ://127.0.0.1")).toContain("127.0.0.1");
  });

  it("never skips a text the WHATWG parser accepts (60,000 seeded random texts)", () => {
    const next = random(0x5ec001);
    const alphabet = ["h", "t", "p", "s", "x", "A", "Z", "0", "9", "+", "-", ".", ":", "/", "\\", "@", "[", "]", " ", "\t", "\n", "\r", "\u0000", "\u0001", "\u001f", "\u007f", "\u00a0", "：", "ｈ", "%", "?", "#", "1", "2", "7"];
    let accepted = 0;
    for (let i = 0; i < 60_000; i++) {
      const length = 1 + Math.floor(next() * 12);
      let text = "";
      for (let j = 0; j < length; j++) text += alphabet[Math.floor(next() * alphabet.length)];
      if (parses(text)) {
        accepted++;
        expect(MAY_PARSE_AS_URL.test(text), JSON.stringify(text)).toBe(true);
      }
    }
    // The corpus must reach the parser's accepting side, or the property says nothing.
    expect(accepted).toBeGreaterThan(500);
  });
});

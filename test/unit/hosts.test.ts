/**
 * SEC-001's pre-filter before `new URL`: it may only skip texts the WHATWG parser refuses, or a
 * host the parser would extract goes unjudged. Checked against the parser itself over hostile
 * URL spellings and a seeded random corpus biased towards scheme-shaped text.
 */
import { describe, expect, it } from "vitest";
import { HostTooLong, MAY_PARSE_AS_URL, urlHosts } from "../../worker/protocol/issuing/hosts.js";
import { SEC_001 } from "../../worker/protocol/issuing/rules/sec-001.js";

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

describe("SEC-001: a host the URL parser reads in quadratic time", () => {
  const cjk = (n: number) => Array.from({ length: n }, (_, i) => String.fromCodePoint(0x4e00 + i)).join("");
  const judgeSec001 = async (tool: string, params: Record<string, unknown>) =>
    SEC_001.judge({ command: { intake_version: "1.3", agent_id: "a", tool, params, timestamp: 1, trace_id: "0123456789abcdef" } } as never);

  it("denies unread a host of characters outside ASCII past 256 (21,700 CJK letters: 0.6 s a read, 2.1 s an intake)", async () => {
    for (const url of ["HTTPS://" + cjk(21_700) + ".example/ ", "https://a" + "%E4%B8%80".repeat(7_000) + "/", "http: " + cjk(20_000), "https://u@" + "a".repeat(300) + "é/"]) {
      expect(() => urlHosts(url), url.slice(0, 12)).toThrow(HostTooLong);
      const result = await judgeSec001("fetch_url", { url });
      expect(result.verdict).toBe("deny");
      expect(result.reason).toMatch(/^SEC-001: a URL argument whose host holds characters outside ASCII and is longer than 256/);
    }
    expect((await judgeSec001("run_shell", { command: "curl HTTPS://" + cjk(21_000) + ".example/ " })).verdict).toBe("deny");
  });

  it("shares one IDNA work budget among a Command's URLs (3,900 distinct 250-letter CJK hosts from a brace expansion: 1 s)", async () => {
    const command = "x HTTPS://" + cjk(245) + "{" + Array.from({ length: 3_000 }, (_, i) => i).join(",") + "}.x/ " + "z".repeat(45_000);
    const result = await judgeSec001("run_shell", { command });
    expect(result.verdict).toBe("deny");
    expect(result.reason).toMatch(/^SEC-001: URL arguments whose hosts outside ASCII pass 8388608 units of IDNA work/);
    // Hundreds of ordinary IDN URLs stay well inside it.
    const urls = Array.from({ length: 2_000 }, (_, i) => `https://bücher-${i}.例え.テスト/${cjk(20)}`);
    expect((await judgeSec001("fetch_url", { urls })).verdict).toBe("allow");
    expect((await judgeSec001("run_shell", { command: urls.map((u) => "curl " + u).join("; ") })).verdict).toBe("allow");
  });

  it("reads as before an IDN host, a long path, query or userinfo, and an opaque host", async () => {
    for (const url of ["https://例え.テスト/" + cjk(20_000), "https://bücher.example/?q=" + cjk(5_000), "https://" + cjk(20_000) + "@example.com/", "foo://" + cjk(5_000), "https://" + "a".repeat(5_000) + ".example/", "https://" + cjk(60) + ".example:8443/"]) {
      expect(() => urlHosts(url), url.slice(0, 12)).not.toThrow();
      expect((await judgeSec001("fetch_url", { url })).verdict).toBe("allow");
    }
    expect((await judgeSec001("fetch_url", { url: "http://l\u00adocalhost" + "\u00ad".repeat(40) + "/" })).verdict).toBe("deny");
  });
});

/**
 * SEC-003/OUT-001 read the jwt secret pattern with jwtIn, in linear time: as a regular expression it
 * was quadratic in a run of token characters holding many `eyJ` (every one scanned the rest of the
 * run). These tests hold jwtIn to the deployed pattern on seeded random texts.
 */
import { describe, expect, it } from "vitest";
import { SECRET_PATTERN } from "../../worker/protocol/issuing/scopes.js";
import { JWT_PATTERN, jwtIn, SEC_003, secretIn } from "../../worker/protocol/issuing/rules/sec-003.js";
import { OUT_001 } from "../../worker/protocol/issuing/rules/out-001.js";

const SEGMENT_PIECES = ["eyJ", "a", "aaaa", "aaaaaaaa", "aaaaaaaa", "AAAAAAAAAAAAAAAA", "-", "_", "e", "yJ", "0"];
const SEPARATORS = [".", ".", ".", ".", ".", ".", " ", "\n", "x", "-", "", "é", "%"];

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
}

describe("jwtIn", () => {
  it("reads the deployed jwt pattern", () => {
    expect(SECRET_PATTERN.find((p) => p.name === "jwt")!.pattern).toBe(JWT_PATTERN);
  });

  it("answers as the deployed pattern on 80,000 seeded random texts", () => {
    const rand = seeded(1201);
    const deployed = new RegExp(JWT_PATTERN, "m");
    let matched = 0;
    for (let i = 0; i < 80_000; i++) {
      const pick = (a: string[]) => a[Math.floor(rand() * a.length)];
      let text = rand() < 0.5 ? pick(SEPARATORS) : "";
      for (let k = 1 + Math.floor(rand() * 5); k > 0; k--) {
        if (rand() < 0.6) text += "eyJ";
        for (let j = 1 + Math.floor(rand() * 3); j > 0; j--) text += pick(SEGMENT_PIECES);
        text += pick(SEPARATORS);
      }
      const d = deployed.test(text);
      expect(jwtIn(text), JSON.stringify(text)).toBe(d);
      if (d) matched++;
    }
    expect(matched).toBeGreaterThan(400);
  });

  it("judges runs of many eyJ at the size limits without blowing up", async () => {
    const params = { url: "https://x.example/", body: "eyJ-".repeat(16_000) };
    expect((await SEC_003.judge({ command: { intake_version: "1.3", agent_id: "a", tool: "http_request", params, timestamp: 1, trace_id: "0123456789abcdef" } } as never)).verdict).toBe("allow");
    expect((await OUT_001.judge({ tool: "fetch_url", output: { content: "eyJ_".repeat(64 * 1024) } } as never)).verdict).toBe("allow");
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuv";
    expect(secretIn("eyJ-".repeat(16_000) + jwt)).toBe("jwt");
    expect(secretIn("eyJ-".repeat(16_000) + "eyJaaaaaaaa.eyJaaaaaaaa.short")).toBe(null);
  });
});

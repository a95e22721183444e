/**
 * The Idempotency-Key of an enforce call (worker/routes/decision-call.ts). workerd passes a header
 * on with the spaces or tabs that followed it on the wire (`Idempotency-Key: abc   ` arrives as
 * "abc   "), but they are no part of the field value (RFC 9110 §5.5): the key is "abc", as a
 * bearer token is read without them. A Request built in a test normalises them away, so the
 * parse is tested here on the header as the runtime hands it over.
 */
import { describe, expect, it } from "vitest";
import { parseDecisionCall } from "../../worker/routes/decision-call.js";
import { ApiError } from "../../worker/http.js";

const AUDIENCE = "https://relying-party.example";

function context(header: string | undefined) {
  const vars = new Map<string, unknown>([
    ["relyingParty", { name: "gate", registration: "r1", audiences: [AUDIENCE] }],
    ["services", { now: () => 1796000000.125 }],
  ]);
  return {
    env: { AUDIENCES: AUDIENCE },
    get: (k: string) => vars.get(k),
    set: (k: string, v: unknown) => void vars.set(k, v),
    req: { path: "/v1/receipts/verify", header: (name: string) => (name === "idempotency-key" ? header : undefined) },
  } as never;
}

const call = (header: string | undefined, mode?: "enforce" | "audit") =>
  parseDecisionCall(context(header), { receipt: {}, audience: AUDIENCE, ...(mode ? { mode } : {}) } as never, "receipt");

describe("Idempotency-Key", () => {
  it("drops spaces and tabs after the key: the same key as without them", () => {
    const plain = call("abc").idempotency;
    expect(plain?.key).toBe("abc");
    for (const raw of ["abc ", "abc\t", "abc \t  "]) expect(call(raw).idempotency, JSON.stringify(raw)).toEqual(plain);
  });

  it("still refuses a key that is empty once trimmed, or holds inner whitespace or non-ASCII", () => {
    for (const raw of ["", " ", "\t", "a b", "a\tb", "é", "x".repeat(256), "x".repeat(255) + "y "]) {
      expect(() => call(raw), JSON.stringify(raw)).toThrow(ApiError);
    }
    expect(call("x".repeat(255) + "  ").idempotency?.key).toBe("x".repeat(255));
  });

  it("is ignored in audit mode, whatever its form", () => {
    expect(call("a b", "audit").idempotency).toBeUndefined();
  });
});

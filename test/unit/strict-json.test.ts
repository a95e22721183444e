import { describe, expect, it } from "vitest";
import { parseStrictJson, parseStrictJsonBytes, StrictJsonError, type StrictJsonReason } from "../../worker/protocol/strict-json.js";

const reasonOf = (text: string): StrictJsonReason | "accepted" => {
  try {
    parseStrictJson(text);
    return "accepted";
  } catch (err) {
    if (err instanceof StrictJsonError) return err.reason;
    throw err;
  }
};

describe("strict JSON", () => {
  it("parses what JSON.parse parses, to the same value", () => {
    const docs = [
      `{"a":[1,2.5,-0,1e-7,true,false,null,"x\\u00e9\\n\\"\\\\\\/"],"b":{"c":{}},"d":[]}`,
      ` [ "\\ud83d\\ude00", "😀", 9007199254740991, -9007199254740991, 1.5e-300, 123.456 ] `,
      `"just a string"`,
      `0`,
    ];
    for (const doc of docs) expect(parseStrictJson(doc)).toEqual(JSON.parse(doc));
  });

  it("keeps __proto__ as an ordinary own key", () => {
    const v = parseStrictJson(`{"__proto__":{"polluted":true}}`) as Record<string, unknown>;
    expect(Object.hasOwn(v, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    [`{"a":1,"a":2}`, "duplicate_key"],
    [`{"x":{"k":1,"k":1}}`, "duplicate_key"],
    [`"\\ud800"`, "lone_surrogate"],
    [`"\\udc00\\ud800"`, "lone_surrogate"],
    [`"a\ud800b"`, "lone_surrogate"],
    [`9007199254740993`, "unsafe_integer"],
    [`-9007199254740992`, "unsafe_integer"],
    [`1e20`, "unsafe_integer"],
    [`1.5e300`, "unsafe_integer"],
    [`1e400`, "non_finite"],
    [`NaN`, "syntax"],
    [`Infinity`, "syntax"],
    [`{"a":1,}`, "syntax"],
    [`[1 2]`, "syntax"],
    [`01`, "syntax"],
    [`{"a":1} x`, "syntax"],
    [`"tab\there"`, "syntax"],
    [`{"a"`, "syntax"],
    ["[".repeat(33) + "]".repeat(33), "too_deep"],
  ] as const)("%s is refused as %s", (text, reason) => {
    expect(reasonOf(text)).toBe(reason);
  });

  it("accepts nesting of exactly 32", () => {
    expect(reasonOf("[".repeat(32) + "]".repeat(32))).toBe("accepted");
  });

  it("reports the path of the violation", () => {
    try {
      parseStrictJson(`{"receipt":{"tool":"a","tool":"b"}}`);
      expect.unreachable();
    } catch (err) {
      expect((err as StrictJsonError).path).toEqual(["receipt"]);
    }
    try {
      parseStrictJson(`[0, {"a": NaN}]`);
      expect.unreachable();
    } catch (err) {
      expect((err as StrictJsonError).path).toEqual([1]);
    }
  });

  it("refuses invalid UTF-8", () => {
    expect(() => parseStrictJsonBytes(new Uint8Array([0x22, 0xc3, 0x28, 0x22]))).toThrow(expect.objectContaining({ reason: "invalid_utf8" }));
  });
});

describe("strict JSON attribution", () => {
  it("attributes a duplicate top-level key to the top level, not to the member parsed before it", () => {
    try {
      parseStrictJson(`{"audience":"x","receipt":{},"audience":"y"}`);
      expect.unreachable();
    } catch (err) {
      expect((err as StrictJsonError).path).toEqual([]);
    }
  });
});

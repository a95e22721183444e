import { describe, expect, it, vi } from "vitest";
import { parseStrictJson, parseStrictJsonBytes, parseWithParser, StrictJsonError, type StrictJsonReason } from "../../worker/protocol/strict-json.js";

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

/** What a parse came to: the value with its own keys in order, or the refusal with its reason, path and message. */
const outcome = (parse: (text: string) => unknown, text: string) => {
  try {
    const value = parse(text);
    return { value, keys: JSON.stringify(value, (_k, v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.entries(v) : v)) };
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    return { reason: err.reason, path: err.path, message: err.message };
  }
};

describe("strict JSON: the native fast path and the parser agree", () => {
  const tricky = [
    // Quotes, backslashes, colons and brackets inside strings must not be counted as structure.
    `{"a\\\\":1,"b":"\\\\"}`,
    `{"a":"\\\\\\"","b":"x\\\\\\\\"}`,
    `{"k:1":"v:2","[":"]","{":"}"}`,
    `{"a":"\\"}","b":{"c":"\\\\"}}`,
    // Duplicates, plain, escaped, nested, and the key JSON.parse treats specially.
    `{"a":1,"\\u0061":2}`,
    `{"x":[{"k":1},{"k":1,"k":2}]}`,
    `{"__proto__":1,"__proto__":2}`,
    `{"__proto__":{"a":1},"b":2}`,
    `{"2":1,"1":2,"b":3,"a":4}`,
    `{"":1,"":2}`,
    `{"":1," ":2}`,
    // Numbers at and around the limits.
    `[999999999999999,-999999999999999,1234567890123456,9007199254740991,9007199254740992]`,
    `[0.1e1,1E2,1e-2,-0,0.0000001,123456789012345.678]`,
    `[12345678901234567.5]`,
    // Sixteen integer digits: natively up to 2^53−1 as a plain integer, the parser for the rest.
    `[1764000000000001,-1764000000000001,9007199254740991,-9007199254740991,1000000000000000]`,
    `[9007199254740992]`,
    `[-9007199254740992]`,
    `[9999999999999999]`,
    `[9007199254740991.5]`,
    `[9007199254740990.5]`,
    `[1234567890123456.7]`,
    `[1234567890123456e0]`,
    `[0123456789012345]`,
    `[12345678901234567]`,
    `[1., -, .5, +1]`,
    `[1.]`,
    `-`,
    `0x10`,
    `[-0.0,00]`,
    // Surrogates: escaped pairs in either case, lone ones, raw ones, and text that only looks like an escape.
    `["\\uD83D\\uDE00","\\ud83d\\ude00","😀"]`,
    `["\\uD800"]`,
    `["\\uDFFF\\uD800"]`,
    `["\\\\ud800"]`,
    `["a\\ud800"]`,
    `"\ud800"`,
    `"\udc00"`,
    // Depth: exactly the limit, one over, and brackets in strings that do not nest.
    "[".repeat(32) + "]".repeat(32),
    "[".repeat(33) + "]".repeat(33),
    `[${'{"a":'.repeat(31)}1${"}".repeat(31)}]`,
    `[${'{"a":'.repeat(32)}1${"}".repeat(32)}]`,
    `["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]`,
    // Syntax both refuse, and what JSON.parse would take but leaves to the parser.
    ``,
    ` `,
    `\ufeff{}`,
    `{"a":1}\u00a0`,
    `{"a":1} `,
    `\t\n\r {"a" : [ 1 , 2 ] }\r\n`,
    `{"a":"tab\there"}`,
    `{"a":"\\u0000"}`,
    `{"a":"\\x41"}`,
    `{"a":'b'}`,
    `[1,]`,
    `{"a":1}{"b":2}`,
    `"unterminated`,
    `"ends in a backslash\\`,
    `[true,false,null,tru]`,
  ];

  it.each(tricky.map((t) => [t]))("%s", (text) => {
    expect(outcome(parseStrictJson, text)).toEqual(outcome(parseWithParser, text));
  });

  it("parses sixteen-digit safe integers natively (a sequence taken from a microsecond clock)", () => {
    const body = JSON.stringify({ sequence: 1_764_000_000_000_001, max: Number.MAX_SAFE_INTEGER, min: -Number.MAX_SAFE_INTEGER });
    const spy = vi.spyOn(JSON, "parse");
    try {
      expect(parseStrictJson(body)).toEqual({ sequence: 1_764_000_000_000_001, max: Number.MAX_SAFE_INTEGER, min: -Number.MAX_SAFE_INTEGER });
      expect(spy).toHaveBeenCalledWith(body);
      spy.mockClear();
      expect(() => parseStrictJson(`{"sequence":9007199254740992}`)).toThrow(expect.objectContaining({ reason: "unsafe_integer" }));
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it("agrees on a verification body, and parses it natively", () => {
    const body = JSON.stringify({ receipt: { action: "ccs:tool-invoke:t:" + "a".repeat(64), nonce: "0".repeat(32), sequence: 7, issued_at: 1_700_000_000 }, audience: "https://rp.example", request: { params: { q: "x", n: [1, 2.5, { deep: true }] } } });
    const spy = vi.spyOn(JSON, "parse");
    try {
      expect(outcome(parseStrictJson, body)).toEqual(outcome(parseWithParser, body));
      expect(spy).toHaveBeenCalledWith(body);
    } finally {
      spy.mockRestore();
    }
  });
});

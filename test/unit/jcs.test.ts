import canonicalize from "canonicalize";
import { describe, expect, it } from "vitest";
import { jcs } from "../../worker/protocol/digest.js";

/** A small deterministic generator of JSON values, strings with escapes and astral characters. */
function* values(seed: number, count: number): Generator<unknown> {
  let x = seed;
  const rand = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const alphabet = ["a", "Z", "é", "€", "😀", "\n", '"', "\\", "\u0001", "\u2028", "ß", "\ud83d\ude00", "0"];
  const str = () => Array.from({ length: Math.floor(rand() * 8) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
  const num = () => [0, -0, 1, -1, 1.5, 1e21, 1e-7, 123456789.125, -(2 ** 52), Number.MAX_SAFE_INTEGER, 5e-324, 1.7976931348623157e308][Math.floor(rand() * 12)];
  const gen = (d: number): unknown => {
    const k = rand();
    if (d > 3 || k < 0.35) return [str(), num(), true, false, null][Math.floor(rand() * 5)];
    if (k < 0.65) return Array.from({ length: Math.floor(rand() * 4) }, () => gen(d + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(rand() * 5) }, () => [str(), gen(d + 1)]));
  };
  for (let i = 0; i < count; i++) yield gen(0);
}

describe("jcs", () => {
  it("agrees with the canonicalize library on 5,000 generated values", () => {
    for (const v of values(7, 5000)) expect(jcs(v)).toBe(canonicalize(v));
  });

  it("refuses lone surrogates, non-finite numbers and values JSON cannot carry", () => {
    for (const bad of ["\ud800", { "\udc00": 1 }, [Number.NaN], { a: Infinity }, 10n, () => 1]) expect(() => jcs(bad)).toThrow(TypeError);
  });

  it("sorts keys by UTF-16 code units, not code points", () => {
    expect(jcs({ "\ue000": 1, "\ud83d\ude00": 2 })).toBe('{"😀":2,"\ue000":1}');
  });
});

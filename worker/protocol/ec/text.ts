/**
 * Text as the EC-Agent protocol counts it: Unicode code points (not UTF-16 units, not bytes),
 * Python's `str.casefold`, Python's whitespace and Python's `\w`.
 */
import { CASEFOLD_TABLE } from "./casefold-table.js";

const FOLD = new Map<number, string>(
  CASEFOLD_TABLE.split(";").map((entry) => {
    const [cp, folded] = entry.split("=");
    return [parseInt(cp, 16), String.fromCodePoint(...folded.split(",").map((h) => parseInt(h, 16)))];
  }),
);

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Python's `str.casefold()`: full Unicode case folding, so `ß` → `ss`, `ς` → `σ`. */
export function casefold(text: string): string {
  // ASCII folds as it lowercases (A–Z only), and most text is ASCII: no walk through the table.
  if (ASCII_ONLY.test(text)) return text.toLowerCase();
  let out = "";
  for (const ch of text) out += FOLD.get(ch.codePointAt(0)!) ?? ch;
  return out;
}

/** The code points of a string. */
export const codePoints = (text: string): string[] => Array.from(text);

/** Python's `str.isspace()` characters, which `str.split()` splits on. */
const PY_SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/gu;

/** Python's `" ".join(text.split())`. */
export const collapseWhitespace = (text: string): string => text.replace(PY_SPACE, " ").replace(/^ | $/g, "");

/** Python's `\w` on str: letters, numbers (Nd, Nl, No) and the underscore; combining marks are not word characters. */
const WORD = /[\p{L}\p{N}_]+/gu;

/** T(x): the word-character runs of casefold(x) longer than one code point, as a set. */
export function tokens(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of casefold(text).matchAll(WORD)) if (codePoints(m[0]).length > 1) out.add(m[0]);
  return out;
}

/** What the normaliser is: it enters the support configuration digest, so changing it changes that digest. */
export const NORMALISER = { version: 1, casefold: "python-3.11.7 str.casefold (unicode 14.0.0)", whitespace: PY_SPACE.source, substring_case: "lower" } as const;

/** What the tokeniser is: likewise part of the support configuration digest. */
export const TOKENISATION = { version: 1, word: WORD.source, min_code_points: 2 } as const;

/**
 * Whether `needle` occurs in `haystack`, in time linear in their lengths (Knuth–Morris–Pratt over
 * UTF-16 units, which for well-formed strings is a match of code points, as `includes` is).
 * `String.prototype.includes` is not linear in V8: `a…ab a…a` against a long run of `a` reads the
 * needle's half at every position, about 2 µs a character of haystack for a 16,384-unit claim.
 */
export function containsText(haystack: string, needle: string): boolean {
  const m = needle.length;
  if (m === 0) return true;
  if (m > haystack.length) return false;
  // A needle of a few units: `includes` reads at most that many units a position.
  if (m <= 16) return haystack.includes(needle);
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    const c = needle.charCodeAt(i);
    while (k > 0 && needle.charCodeAt(k) !== c) k = fail[k - 1];
    if (needle.charCodeAt(k) === c) k++;
    fail[i] = k;
  }
  for (let i = 0, k = 0; i < haystack.length; i++) {
    const c = haystack.charCodeAt(i);
    while (k > 0 && needle.charCodeAt(k) !== c) k = fail[k - 1];
    if (needle.charCodeAt(k) === c && ++k === m) return true;
  }
  return false;
}

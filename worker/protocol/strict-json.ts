/**
 * Strict JSON: RFC 8259 plus the refusals the wire profile requires. One pass builds the value
 * and rejects duplicate object keys, lone surrogates (raw or escaped), integers outside the
 * IEEE-754 safe range (any number of magnitude 2^53 or more, whatever its notation, since it
 * cannot be told from an integer that lost precision), numbers that overflow to infinity, and nesting deeper than `maxDepth`.
 * `JSON.parse` accepts all of these silently, so it is used on untrusted input only after a scan
 * has shown that none of them is there (the native fast path below).
 */

export type StrictJsonReason =
  | "syntax"
  | "duplicate_key"
  | "lone_surrogate"
  | "unsafe_integer"
  | "non_finite"
  | "too_deep"
  | "invalid_utf8";

/** Where a violation was found: the top-level member it sits in (or is), when there is one. */
export type JsonPath = (string | number)[];

export class StrictJsonError extends Error {
  constructor(
    readonly reason: StrictJsonReason,
    readonly path: JsonPath,
    message: string,
  ) {
    super(message);
    this.name = "StrictJsonError";
  }
}

export const DEFAULT_MAX_DEPTH = 32;

/** A JSON object (not null, not an array). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const NEEDS_SLOW_SCAN = /[\\\u0000-\u001f\ud800-\udfff]/;

/** Decodes UTF-8 bytes (refusing invalid sequences) and parses them strictly. */
export function parseStrictJsonBytes(bytes: Uint8Array, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new StrictJsonError("invalid_utf8", [], "body is not valid UTF-8");
  }
  return parseStrictJson(text, maxDepth);
}

export function parseStrictJson(text: string, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  const fast = nativeParse(text, maxDepth);
  return fast ? fast.value : parseWithParser(text, maxDepth);
}

/** The one-pass parser alone: what the native path must agree with, and every refusal's source. */
export function parseWithParser(text: string, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  const parser = new Parser(text, maxDepth);
  parser.ws();
  const value = parser.value(0);
  parser.ws();
  if (parser.i !== text.length) parser.fail("syntax", "unexpected data after the JSON value");
  return value;
}

/**
 * The native fast path. `JSON.parse` builds the same value as the parser below whenever the text
 * is valid JSON with no duplicate key, no lone surrogate, no unsafe or non-finite number and no
 * nesting deeper than `maxDepth`. One scan outside strings proves the last three conservatively
 * (any exponent, any integer part of 17 digits or more or of 16 beyond 2^53−1 or with a fraction, any `\u` escape of a surrogate sends the
 * text to the parser), counts the object members, and finds the nesting depth; `JSON.parse`
 * refuses what is not JSON; and a value holding fewer keys than the text has members had a
 * duplicate key collapsed. Anything in doubt, and every refusal, is left to the parser, so the
 * fast path accepts exactly what the parser accepts and every error comes from the parser.
 */
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);
const SURROGATE_ESCAPE = /\\u[dD][89abcdefABCDEF]/;
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

function nativeParse(s: string, maxDepth: number): { value: unknown } | null {
  if (!isWellFormed(s) || SURROGATE_ESCAPE.test(s)) return null;
  let depth = 0;
  let members = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: its closing quote is the first one not escaped by an odd run of backslashes.
      for (;;) {
        const q = s.indexOf('"', i + 1);
        if (q < 0) return null;
        let b = q - 1;
        while (s.charCodeAt(b) === 0x5c) b--;
        i = q;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x3a) members++;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return null;
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = c === 0x2d ? i + 1 : i;
      let j = start;
      while (j < n && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x39) j++;
      // Up to 15 integer digits is below 2^53 whatever follows; 16 only as a plain integer no
      // greater than 2^53−1 (same length, so the text compares as the number does).
      if (j - start > 16 || (j - start === 16 && (s.charCodeAt(j) === 0x2e || s.slice(start, j) > MAX_SAFE_DIGITS))) return null;
      if (s.charCodeAt(j) === 0x2e) {
        j++;
        while (j < n && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x39) j++;
      }
      const e = s.charCodeAt(j);
      if (e === 0x65 || e === 0x45) return null;
      i = j - 1;
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(s);
  } catch {
    return null;
  }
  return memberCount(value) === members ? { value } : null;
}

/** Keys of every object in a parsed value. */
function memberCount(v: unknown): number {
  if (v === null || typeof v !== "object") return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) n += memberCount(v[i]);
    return n;
  }
  for (const key in v) n += 1 + memberCount((v as Record<string, unknown>)[key]);
  return n;
}

class Parser {
  i = 0;
  /** The top-level member being parsed: enough to attribute a violation, and cheap to keep. */
  top: string | number | undefined;

  constructor(
    readonly s: string,
    readonly maxDepth: number,
  ) {}

  fail(reason: StrictJsonReason, message: string): never {
    throw new StrictJsonError(reason, this.top === undefined ? [] : [this.top], `${message} at offset ${this.i}`);
  }

  ws(): void {
    const s = this.s;
    let i = this.i;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
    this.i = i;
  }

  value(depth: number): unknown {
    const c = this.s.charCodeAt(this.i);
    if (c === 0x7b) return this.object(depth + 1);
    if (c === 0x5b) return this.array(depth + 1);
    if (c === 0x22) return this.string();
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (this.s.startsWith("true", this.i)) return (this.i += 4), true;
    if (this.s.startsWith("false", this.i)) return (this.i += 5), false;
    if (this.s.startsWith("null", this.i)) return (this.i += 4), null;
    return this.fail("syntax", Number.isNaN(c) ? "unexpected end of input" : "unexpected token");
  }

  object(depth: number): Record<string, unknown> {
    if (depth > this.maxDepth) this.fail("too_deep", `nesting deeper than ${this.maxDepth}`);
    const out: Record<string, unknown> = {};
    this.i++;
    this.ws();
    if (this.s.charCodeAt(this.i) === 0x7d) {
      this.i++;
      return out;
    }
    for (;;) {
      if (this.s.charCodeAt(this.i) !== 0x22) this.fail("syntax", "expected a string key");
      const key = this.string();
      if (Object.hasOwn(out, key)) this.fail("duplicate_key", `duplicate key ${JSON.stringify(key)}`);
      this.ws();
      if (this.s.charCodeAt(this.i) !== 0x3a) this.fail("syntax", "expected ':'");
      this.i++;
      this.ws();
      if (depth === 1) this.top = key;
      const v = this.value(depth);
      if (depth === 1) this.top = undefined;
      if (key === "__proto__") Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
      else out[key] = v;
      this.ws();
      const c = this.s.charCodeAt(this.i++);
      if (c === 0x7d) return out;
      if (c !== 0x2c) (this.i--, this.fail("syntax", "expected ',' or '}'"));
      this.ws();
    }
  }

  array(depth: number): unknown[] {
    if (depth > this.maxDepth) this.fail("too_deep", `nesting deeper than ${this.maxDepth}`);
    const out: unknown[] = [];
    this.i++;
    this.ws();
    if (this.s.charCodeAt(this.i) === 0x5d) {
      this.i++;
      return out;
    }
    for (;;) {
      if (depth === 1) this.top = out.length;
      out.push(this.value(depth));
      if (depth === 1) this.top = undefined;
      this.ws();
      const c = this.s.charCodeAt(this.i++);
      if (c === 0x5d) return out;
      if (c !== 0x2c) (this.i--, this.fail("syntax", "expected ',' or ']'"));
      this.ws();
    }
  }

  string(): string {
    const s = this.s;
    // Fast path: no escape, control character or surrogate before the closing quote.
    const close = s.indexOf('"', this.i + 1);
    if (close > 0) {
      const body = s.slice(this.i + 1, close);
      if (!NEEDS_SLOW_SCAN.test(body)) {
        this.i = close + 1;
        return body;
      }
    }
    let i = this.i + 1;
    let start = i;
    let out = "";
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        out += s.slice(start, i);
        this.i = i + 1;
        return out;
      }
      if (c === 0x5c) {
        out += s.slice(start, i);
        const e = s.charCodeAt(i + 1);
        i += 2;
        switch (e) {
          case 0x22: out += '"'; break;
          case 0x5c: out += "\\"; break;
          case 0x2f: out += "/"; break;
          case 0x62: out += "\b"; break;
          case 0x66: out += "\f"; break;
          case 0x6e: out += "\n"; break;
          case 0x72: out += "\r"; break;
          case 0x74: out += "\t"; break;
          case 0x75: {
            const u = this.hex4(i);
            i += 4;
            if (u >= 0xd800 && u <= 0xdbff) {
              const lo = s.charCodeAt(i) === 0x5c && s.charCodeAt(i + 1) === 0x75 ? this.hex4(i + 2) : -1;
              if (lo < 0xdc00 || lo > 0xdfff) (this.i = i, this.fail("lone_surrogate", "unpaired high surrogate escape"));
              out += String.fromCharCode(u, lo);
              i += 6;
            } else if (u >= 0xdc00 && u <= 0xdfff) {
              this.i = i;
              this.fail("lone_surrogate", "unpaired low surrogate escape");
            } else out += String.fromCharCode(u);
            break;
          }
          default:
            this.i = i;
            this.fail("syntax", "invalid escape");
        }
        start = i;
        continue;
      }
      if (c < 0x20 || Number.isNaN(c)) {
        this.i = i;
        this.fail("syntax", Number.isNaN(c) ? "unterminated string" : "control character in string");
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const lo = s.charCodeAt(i + 1);
        if (c > 0xdbff || !(lo >= 0xdc00 && lo <= 0xdfff)) (this.i = i, this.fail("lone_surrogate", "lone surrogate in string"));
        i += 2;
        continue;
      }
      i++;
    }
  }

  hex4(at: number): number {
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.s.charCodeAt(at + k);
      const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
      if (d < 0) (this.i = at, this.fail("syntax", "invalid \\u escape"));
      v = v * 16 + d;
    }
    return v;
  }

  digitsFrom(j: number): number {
    const s = this.s;
    while (s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x39) j++;
    return j;
  }

  number(): number {
    const s = this.s;
    const start = this.i;
    let i = start;
    if (s.charCodeAt(i) === 0x2d) i++;
    if (s.charCodeAt(i) === 0x30) i++;
    else {
      const j = this.digitsFrom(i);
      if (j === i) (this.i = i, this.fail("syntax", "invalid number"));
      i = j;
    }
    if (s.charCodeAt(i) === 0x2e) {
      const j = this.digitsFrom(i + 1);
      if (j === i + 1) (this.i = i, this.fail("syntax", "invalid number"));
      i = j;
    }
    const e = s.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = s.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) i++;
      const j = this.digitsFrom(i);
      if (j === i) (this.i = i, this.fail("syntax", "invalid number"));
      i = j;
    }
    this.i = i;
    const v = Number(s.slice(start, i));
    if (!Number.isFinite(v)) this.fail("non_finite", "number overflows to infinity");
    if (Number.isInteger(v) && !Number.isSafeInteger(v)) this.fail("unsafe_integer", "integer outside the safe range ±(2^53−1)");
    return v;
  }
}

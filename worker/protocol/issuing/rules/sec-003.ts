import { jwtStartIn } from "../../boundary.js";
import { NETWORK_FACING_TOOL, SECRET_PATTERN } from "../scopes.js";
import { allow, argumentStrings, deny, regex, toolIn, type InputRule } from "./types.js";

/** A backslash escape of JSON, JavaScript or C text: `\n`, `\t`, `\"`, `\/`, `\uXXXX`, `\xHH`, … */
const BACKSLASH_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([nrtbfv0])|(.))/gs;
const CONTROL_ESCAPE: Record<string, string> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f", v: "\v", 0: "\0" };
/** An ASCII byte percent-encoded. */
const PERCENT_ASCII = /%([0-7][0-9a-fA-F])/g;

/**
 * The readings of a text the secret patterns are tried on: the text as it is, its backslash escapes
 * decoded (a JSON or C string written out, `"keys:\nAKIA…"`) and its percent-encoded ASCII decoded
 * (`k%3DAKIA…`), and that decoded text's escapes decoded (a JSON string percent-encoded,
 * `%22keys%3A%5CnAKIA…`). Each pattern starts at a word boundary, so as written the `n` of `\n`
 * or the `D` of `%3D` glued a credential to the word before it and hid it.
 */
function secretReadings(text: string): string[] {
  const unescape = (t: string) => t.replace(BACKSLASH_ESCAPE, (_m, u, x, c, other) => (u ? String.fromCharCode(parseInt(u, 16)) : x ? String.fromCharCode(parseInt(x, 16)) : c ? CONTROL_ESCAPE[c] : other));
  const out = [text];
  if (text.includes("\\")) out.push(unescape(text));
  for (const t of [...out]) {
    if (!t.includes("%")) continue;
    const decoded = t.replace(PERCENT_ASCII, (_m, h) => String.fromCharCode(parseInt(h, 16)));
    out.push(decoded);
    // A JSON string percent-encoded (`%22keys%3A%5CnAKIA…`): its escapes show only once its bytes are decoded.
    if (decoded.includes("\\")) out.push(unescape(decoded));
  }
  return out;
}

/** The deployed jwt pattern, whose regular-expression reading is quadratic (see jwtIn). */
export const JWT_PATTERN = "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{16,}";
const JWT_REST = /\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/y;

/** Whether `text` matches JWT_PATTERN, in linear time (jwtStartIn: one start per run of token characters; as a regular expression, `eyJ-` × 15,000, 60 KB, took 1.3 s). */
export const jwtIn = (text: string): boolean => jwtStartIn(text, 8, JWT_REST);

/** The name of the first deployed secret pattern `text` matches in any of its readings, or null. */
export function secretIn(text: string): string | null {
  const readings = secretReadings(text);
  for (const { name, pattern } of SECRET_PATTERN) {
    if (readings.some((t) => (pattern === JWT_PATTERN ? jwtIn(t) : regex(pattern, "m").test(t)))) return name;
  }
  return null;
}

export const SEC_003: InputRule = {
  name: "SEC-003",
  trigger: "an argument matches a deployed secret pattern (SECRET_PATTERN)",
  scope: "string arguments of tools in NETWORK_FACING_TOOL",
  judge({ command }) {
    if (!toolIn(NETWORK_FACING_TOOL, command.tool as string)) return allow("not a network-facing tool");
    for (const s of argumentStrings(command.params)) {
      const found = secretIn(s);
      if (found) return deny(`SEC-003: a ${found} would leave for the network`);
    }
    return allow();
  },
};

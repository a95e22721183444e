/**
 * What a rule is: a structural test with a trigger and a closed scope (CCS §4.8), judging
 * either the Command at intake (SEC) or the tool's output at finalisation (OUT).
 */
import type { TrustedKey } from "../../anchors.js";
import type { SignatureVerifier } from "../../ed25519.js";
import { SHELL_WORK_BASE, SHELL_WORK_PER_CHAR, ShellTooComplex } from "../shell.js";

export type RuleVerdict = "allow" | "deny" | "escalate";

export interface RuleResult {
  name: string;
  verdict: RuleVerdict;
  /** Why, in a sentence; "" is never used for deny or escalate. */
  reason: string;
}

export type RuleOutcome = Omit<RuleResult, "name">;

/** The normalised Command as the rules see it (CCS §3.1). */
export interface Command {
  intake_version: "1.3";
  agent_id: string;
  tool: string;
  params: Record<string, unknown>;
  /** Unix seconds, UTC. */
  timestamp: number;
  trace_id: string;
  runtime_context?: Record<string, unknown>;
  delegation_chain?: Record<string, unknown>;
}

/** An explicit human approval of one exact request (SEC-005). */
export interface HumanApproval {
  approver: string;
  /** The request_hash of the request approved: an approval of another request approves nothing here. */
  request_hash: string;
}

export interface InputContext {
  /** A record rather than a Command: SEC-007 judges what is present. */
  command: Record<string, unknown>;
  requestHash: string;
  humanApproval: HumanApproval | null;
  configHash: string;
  /** The config hashes this deployment is pinned to, or null when it pins none. */
  pinnedConfigHashes: readonly string[] | null;
}

/** What a tool returned, with the metadata OUT-004/005/007 judge. */
export interface ToolOutput {
  /** The response: a string is judged as its text, anything else as its canonical JSON. */
  content: unknown;
  content_type?: string;
  outcome_status?: string;
  /** What the tool declares of its output. */
  declared?: { max_size?: number; content_type?: string };
}

export interface OutputContext {
  tool: string;
  output: ToolOutput;
  /** receipt_hash of the admission receipt being finalised: what a chain link in the output must name. */
  admissionReceiptHash: string;
  /** Pinned keys of an issuer, for receipts carried in the output (OUT-008). */
  issuerKeys(issuer: string): Promise<TrustedKey[] | null>;
  verifier: SignatureVerifier;
}

export interface Rule<C> {
  name: string;
  /** The literal predicate, as documented in docs/rules.md. */
  trigger: string;
  scope: string;
  judge(c: C): RuleOutcome | Promise<RuleOutcome>;
}

export type InputRule = Rule<InputContext>;
export type OutputRule = Rule<OutputContext>;

export const allow = (reason = ""): RuleOutcome => ({ verdict: "allow", reason });
export const deny = (reason: string): RuleOutcome => ({ verdict: "deny", reason });
export const escalate = (reason: string): RuleOutcome => ({ verdict: "escalate", reason });

/**
 * Characters that render as nothing: every Unicode default-ignorable code point (soft hyphen,
 * zero-width and bidi marks, word joiners, BOM, variation selectors and their supplement
 * U+E0100–E01EF, the tag characters U+E0000–E007F, Mongolian free variation selectors, Hangul
 * fillers, …), the ones listed by hand before the property was used, and the C0 and C1 controls
 * and DEL: a consumer that reads a name as a C string stops at its NUL (`drop_table\0x` is
 * `drop_table` there), so a control character must not take a name out of a scope set.
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\p{Default_Ignorable_Code_Point}\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]/gu;

/** A tool name as the scope sets are matched against it: NFKC, invisible characters removed, trimmed, lowercase. */
export const foldToolName = (tool: string): string => tool.normalize("NFKC").replace(INVISIBLE, "").trim().toLowerCase();

/**
 * Whether `tool` is in a scope set. Names are compared folded (foldToolName), so `Delete_File`,
 * `"delete_file "` and a fullwidth `ｄｅｌｅｔｅ＿ｆｉｌｅ` are all `delete_file`.
 */
export const toolIn = (set: readonly string[], tool: unknown): boolean => {
  if (typeof tool !== "string") return false;
  const folded = foldedSet(set);
  if (folded.has(foldToolName(tool))) return true;
  // Read as a C string, a name ends at its first control character (NUL above all): that name counts too.
  const cut = CONTROL.exec(tool);
  return cut !== null && folded.has(foldToolName(tool.slice(0, cut.index)));
};
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Scope sets folded once each (they are configuration, built once per environment). */
const foldedSets = new WeakMap<readonly string[], Set<string>>();
function foldedSet(set: readonly string[]): Set<string> {
  let folded = foldedSets.get(set);
  if (!folded) foldedSets.set(set, (folded = new Set(set.map(foldToolName))));
  return folded;
}

/**
 * A string as a consumer that takes it as a C string reads it: up to its first NUL. execve(2) hands
 * a program its arguments so (`bash -c` of `rm -rf /\u0000 x` runs `rm -rf /`), and open(2) a path;
 * the rules read such a string both ways (review rv-50: `{"cmd": "rm -rf /\u0000 x"}` was allowed).
 */
export const cString = (s: string): string => {
  const nul = s.indexOf("\0");
  return nul < 0 ? s : s.slice(0, nul);
};

/** Marks a binary params value, as intake defines it: `{"$base64": "<padded standard base64>"}`. */
const BINARY_MARKER = "$base64";
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The text a binary value carries, when its bytes are valid UTF-8; null otherwise. */
export function binaryText(data: string): string | null {
  try {
    return strictUtf8.decode(Uint8Array.from(atob(data), (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

/**
 * Everything the input rules scan in the arguments, as a list: every string value, every
 * object key, and the decoded text of every binary value (`{"$base64": …}`) whose bytes are
 * valid UTF-8, beside its base64 form. A key or an encoding is not a place to hide an argument.
 */
export function argumentStrings(params: unknown): string[] {
  const out: string[] = [];
  // A string holding a NUL is also read up to it (cString), as a consumer that takes it as a C string does.
  const push = (s: string) => (out.push(s), s.includes("\0") && out.push(cString(s)));
  const walk = (value: unknown, depth: number) => {
    if (typeof value === "string") push(value);
    else if (Array.isArray(value)) value.forEach((v) => walk(v, depth + 1));
    else if (value !== null && typeof value === "object" && depth < 64) {
      const entries = Object.entries(value);
      if (entries.length === 1 && entries[0][0] === BINARY_MARKER && typeof entries[0][1] === "string") {
        const text = binaryText(entries[0][1]);
        if (text !== null) push(text);
      }
      for (const [k, v] of entries) {
        push(k);
        walk(v, depth + 1);
      }
    }
  };
  walk(params, 0);
  return out;
}

/** Keys that name the program of an argv-shaped command, and keys that hold its arguments. */
const PROGRAM_KEY: ReadonlySet<string> = new Set(["command", "cmd", "program", "executable", "exe", "bin", "binary"]);
const ARGUMENTS_KEY: ReadonlySet<string> = new Set([
  "args", "arguments", "argument", "argv", "params", "parameters", "flags", "options", "path", "paths", "target", "targets",
]);

/** `word` quoted for a shell when it holds anything but plain word characters. */
const shellQuote = (word: string): string => (/^[A-Za-z0-9_\/.,:=@%+{}~-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'");

/**
 * The command lines an argument list may run: every argument string (argumentStrings), and the
 * argv-shaped ones joined into a line: an array of two or more strings (`["rm","-rf","/"]`, each
 * quoted as a shell would need), and a program key (`command`, `cmd`, `program`, …) joined with
 * an arguments key (`args`, `argv`, `arguments`, `flags`, `path`, `targets`, …) of the same
 * object, each alone and all of them together in the object's order, the arguments being a
 * string (taken as a command-line fragment) or an array of strings.
 */
export function commandLines(params: unknown): string[] {
  const out = argumentStrings(params);
  // The joined lines may make at most SHELL_WORK_PER_CHAR characters a character of the argument
  // strings, plus SHELL_WORK_BASE: keys are matched in any case, so 500 program keys (`Executable`,
  // `eXecutable`, …) and 500 arguments keys made 250,000 lines of one object (review rv-54: 49 KB
  // held an intake 2.3 s, 58 KB 4.8 s). Past that the Command is not judged (ShellTooComplex: a deny).
  let left = SHELL_WORK_PER_CHAR * out.reduce((n, s) => n + s.length, 0) + SHELL_WORK_BASE;
  const emit = (line: string) => {
    left -= line.length;
    if (left < 0) throw new ShellTooComplex(line.length, `argv-shaped arguments whose joined command lines pass ${SHELL_WORK_PER_CHAR} characters a character of the arguments (many program and arguments keys in one object): not judged, refused`);
    out.push(line);
  };
  // Each string as written and, when any holds a NUL, again up to its first NUL (cString): `["rm", "-rf", "/\u0000"]`.
  let read = (s: string): string => s;
  const joinArray = (value: unknown): string | null =>
    Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string") ? value.map((v) => shellQuote(read(v))).join(" ") : null;
  const walk = (value: unknown, depth: number) => {
    if (depth >= 64) return;
    if (Array.isArray(value)) {
      if (value.length >= 2) {
        const line = joinArray(value);
        if (line !== null) emit(line);
      }
      value.forEach((v) => walk(v, depth + 1));
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value);
      // Each arguments value read once for every program key of the object.
      const argumentValues = entries.filter(([ak]) => ARGUMENTS_KEY.has(ak.toLowerCase())).map(([, av]) => (typeof av === "string" ? read(av) : joinArray(av))).filter((a): a is string => a !== null);
      for (const [pk, pv] of entries) {
        if (!PROGRAM_KEY.has(pk.toLowerCase())) continue;
        const program = typeof pv === "string" ? read(pv) : joinArray(pv);
        if (program === null) continue;
        for (const args of argumentValues) emit(program + " " + args);
        // Every arguments key together, in the object's order: `{command: "rm", flags: "-rf", path: "/"}`.
        if (argumentValues.length > 1) emit(program + " " + argumentValues.join(" "));
      }
      for (const [, v] of entries) walk(v, depth + 1);
    }
  };
  walk(params, 0);
  if (out.some((s) => s.includes("\0"))) {
    read = cString;
    walk(params, 0);
  }
  return out;
}

/** The text an output rule scans: a string as it is; otherwise every key and string value, one a line. */
export function outputText(content: unknown): string {
  if (typeof content === "string") return content;
  const out: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v)) v.forEach((x) => walk(x, depth + 1));
    else if (v !== null && typeof v === "object" && depth < 64) for (const [k, x] of Object.entries(v)) (out.push(k), walk(x, depth + 1));
  };
  walk(content, 0);
  return out.join("\n");
}

const compiled = new Map<string, RegExp>();
/** A scope pattern compiled once (case-insensitive when asked). */
export function regex(pattern: string, flags = ""): RegExp {
  const key = flags + "/" + pattern;
  let re = compiled.get(key);
  if (!re) compiled.set(key, (re = new RegExp(pattern, flags)));
  return re;
}

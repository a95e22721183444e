import { COMMAND_EXECUTION_TOOL, COMMAND_INJECTION_THRESHOLD, RM_PROTECTED_PATH } from "../scopes.js";
import { closingBraces, expansionEnd, FIND_EXEC, findActionEnds, invocationOf, parseShell, programAt, SCRIPT_SHELL, stdinWords, withoutParameterExpansions, type ParsedShell, type ProgramFound, type SimpleCommand } from "../shell.js";
import { allow, commandLines, deny, escalate, toolIn, type InputRule } from "./types.js";

/**
 * A program word that is an expansion the verifier cannot evaluate (`$CMD`, `${R}`, `$(…)`), or
 * one that holds a parameter expansion and is `rm` were it empty (`rm${x}`, `r$x`m`, `/bin/rm$x`):
 * a shell expands an unset variable to nothing, so what it runs depends on a value the verifier
 * cannot see (review rv-50: `rm${x} -rf /` was allowed while `${x}rm -rf /` escalated).
 */
const UNRESOLVED_PROGRAM = { test: (word: string): boolean => /^(?:\$|`)/.test(word) || (word.includes("$") && baseName(withoutParameterExpansions(word)).toLowerCase() === "rm") };
const baseName = (word: string): string => word.slice(word.lastIndexOf("/") + 1);

/** A leading shell expansion the verifier cannot evaluate: `$NAME`, `${…}`, a special parameter, `~` or `~user`. */
const LEADING_EXPANSION = /^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|~[A-Za-z0-9._-]*)/;

/**
 * A glob that matches every name of a directory (but perhaps the shortest): `*`, `.*`, `**`, `?*`.
 * What `/^\.?[*?]*\*[*?]*$/` matched, read in linear time: the expression tried every `*` of the
 * run as its middle one and ran the rest of the run each time (`rm -rf` of 60,000 `*` and an `x`: 2.6 s).
 */
const everythingGlob = (word: string): boolean => /^\.?[*?]*$/.test(word) && word.includes("*");

/** `path` resolved lexically (repeated `/`, `.` and `..` folded; `..` at the root stays there), with a trailing glob that matches every name (`*`, `**`, `?*`) taken as its directory. */
export function resolveRmPath(path: string): string {
  const stack: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") stack.pop();
    else stack.push(seg);
  }
  if (stack.length > 0 && everythingGlob(stack[stack.length - 1])) stack.pop();
  return "/" + stack.join("/");
}

/** A glob pattern's characters. */
const GLOB = /[*?[]/;

/** A character `.` matches: any but a line terminator. */
const DOT = /^[^\n\r\u2028\u2029]$/;

/** One part of a glob segment: `*`, `?`, a bracket expression (its one-character class), or a literal character. */
type GlobPiece = { kind: "star" } | { kind: "any" } | { kind: "class"; source: string } | { kind: "literal"; char: string };

/** What a glob segment matches, tested one string at a time (the interface of a RegExp's test). */
export interface GlobMatcher {
  test(text: string): boolean;
}

/**
 * Where each bracket expression of `pattern` ends, read as bash reads one: after the `[`, a `!` or
 * `^` negates, a `]` next is a member, `[:…:]`, `[=…=]` and `[.….]` are members (a `]` inside one
 * does not close), a `\` escapes the next member, and the first other `]` closes. close[j] is the index of the `]` that closes a
 * bracket whose members are read from j on (-1: none, the `[` is then a literal), and odd[j]
 * whether those members hold a `[` or a `\`; both computed once from the end, so a pattern of many
 * unclosed `[` is read in linear time.
 */
function bracketEnds(pattern: string): { close: Int32Array; odd: Uint8Array } {
  const n = pattern.length;
  const close = new Int32Array(n + 2).fill(-1);
  const odd = new Uint8Array(n + 2);
  // pair[c][j]: the first q >= j with pattern[q] === c and pattern[q + 1] === "]" (-1: none).
  const pair: Record<string, Int32Array> = { ":": new Int32Array(n + 2).fill(-1), "=": new Int32Array(n + 2).fill(-1), ".": new Int32Array(n + 2).fill(-1) };
  for (let j = n - 1; j >= 0; j--) {
    for (const c of [":", "=", "."]) pair[c][j] = pattern[j] === c && pattern[j + 1] === "]" ? j : pair[c][j + 1];
    const ch = pattern[j];
    if (ch === "]") {
      close[j] = j;
      continue;
    }
    const unit = ch === "[" && (pattern[j + 1] === ":" || pattern[j + 1] === "=" || pattern[j + 1] === ".") ? pair[pattern[j + 1]][j + 2] : -1;
    // A `\` escapes the member after it (`[\]]` holds `]`).
    const from = unit >= 0 ? unit + 2 : ch === "\\" ? Math.min(j + 2, n) : j + 1;
    close[j] = close[from];
    odd[j] = ch === "[" || ch === "\\" ? 1 : odd[from];
  }
  return { close, odd };
}

/**
 * What one path segment, a glob pattern, matches, as bash's pattern matching reads it: `*` any run
 * of characters, `?` any one, a bracket expression one character of its class (`!` or `^`
 * negating, a `]` right after the `[` or its negation a member: `[]e]`, `[!]x]`), any other
 * character itself. A bracket holding a POSIX class, an equivalence class or a collating symbol
 * (`[[:alpha:]]`, `[[=e=]]`, `[[.e.]]`), a nested `[` or a `\` is taken as any one character, which
 * it may match; when a class does not compile (a range out of order, `[z-a]`) every class is taken
 * as any one character (fail closed). Matched by a table of pattern pieces against target
 * positions, in time linear in the pattern for each target character.
 *
 * Before, a bracket was read to its first `]` and a class starting with `]` was written into a
 * regular expression, the rest of its members read as more expression: `/[]e]tc` and `/[!]x]tc`
 * (which bash expands to /etc) matched nothing, `[[=e=]]` ended at its first `]`, and a body of
 * `.*` runs (`rm -rf /[!]` and twenty-two `.*` and `x]`, 195 bytes) backtracked for 2.6 s.
 */
export function globSegment(pattern: string): GlobMatcher {
  const pieces: GlobPiece[] = [];
  const { close, odd } = bracketEnds(pattern);
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") {
      pieces.push({ kind: "star" });
      continue;
    }
    if (c === "?") {
      pieces.push({ kind: "any" });
      continue;
    }
    if (c === "[") {
      let j = i + 1;
      const negate = pattern[j] === "!" || pattern[j] === "^";
      if (negate) j++;
      const from = pattern[j] === "]" ? j + 1 : j;
      const end = from < pattern.length ? close[from] : -1;
      if (end >= 0) {
        if (pattern[j] === "]" ? odd[from] === 1 : odd[j] === 1) pieces.push({ kind: "any" });
        else pieces.push({ kind: "class", source: "^[" + (negate ? "^" : "") + pattern.slice(j, end).replace(/[\]\\^[]/g, "\\$&") + "]$" });
        i = end;
        continue;
      }
    }
    pieces.push({ kind: "literal", char: c });
  }
  // A class that does not compile (`[z-a]`) makes every class any one character, as the expression's fallback did.
  let classes: (RegExp | null)[];
  try {
    classes = pieces.map((p) => (p.kind === "class" ? new RegExp(p.source) : null));
  } catch {
    classes = pieces.map((p) => (p.kind === "class" ? DOT : null));
  }
  const one = (k: number, ch: string): boolean => {
    const p = pieces[k];
    return p.kind === "literal" ? p.char === ch : p.kind === "class" ? classes[k]!.test(ch) : DOT.test(ch);
  };
  return {
    test(text: string): boolean {
      // at[j]: whether the pieces read so far can match text.slice(0, j).
      let at = new Uint8Array(text.length + 1);
      let next = new Uint8Array(text.length + 1);
      at[0] = 1;
      for (let k = 0; k < pieces.length; k++) {
        const star = pieces[k].kind === "star";
        let any = false;
        for (let j = 0; j <= text.length; j++) {
          next[j] = star ? (at[j] || (j > 0 && next[j - 1] && DOT.test(text[j - 1])) ? 1 : 0) : j > 0 && at[j - 1] && one(k, text[j - 1]) ? 1 : 0;
          any ||= next[j] === 1;
        }
        [at, next] = [next, at];
        if (!any) return false;
      }
      return at[text.length] === 1;
    },
  };
}

/**
 * Whether an absolute path is protected: it resolves to a RM_PROTECTED_PATH, or a segment holding
 * a glob (`/?*`, `/[e]tc`, `/e?c`, `/**`) could match a protected path at that level.
 */
const isProtected = (absolute: string): boolean => {
  const resolved = resolveRmPath(absolute);
  // Names compared without regard to case: macOS's default filesystem is case-insensitive, so
  // `rm -rf /users` removes /Users there (review rv-50); a glob matches case-sensitively, as bash's does.
  if (PROTECTED_FOLDED.has(resolved.toLowerCase())) return true;
  const segments = resolved.split("/").filter((s) => s !== "");
  const k = segments.findIndex((s) => GLOB.test(s));
  if (k < 0) return false;
  const prefix = segments.slice(0, k);
  const match = globSegment(segments[k]);
  return RM_PROTECTED_PATH.some((p) => {
    const ps = p.split("/").filter((s) => s !== "");
    return ps.length === k + 1 && prefix.every((s, j) => s.toLowerCase() === ps[j].toLowerCase()) && match.test(ps[k]);
  });
};
const PROTECTED_FOLDED: ReadonlySet<string> = new Set(RM_PROTECTED_PATH.map((p) => p.toLowerCase()));

/** A program's base name as a case-insensitive filesystem finds it (`RM` runs /bin/rm on macOS), lowercased. */
const programName = (word: string): string => word.slice(word.lastIndexOf("/") + 1).toLowerCase();

/**
 * How dangerous one target of a forced recursive `rm` is: "wipe" when it is or resolves to `/`
 * or a top-level system directory, or is everything here (`*`); "wipe" too when it starts with
 * an expansion and what follows is empty, `/`, a glob, or (were the expansion empty) a protected
 * path: `$HOME`, `${HOME}`, `"$HOME/"`, `~`, `$DIR/*`, `$PREFIX/usr`. "unknown" when it holds any
 * other expansion (`$BUILD/out`, `~/project`): what it removes depends on a value the verifier
 * cannot see. Null otherwise.
 */
export function rmTargetRisk(target: string): "wipe" | "unknown" | null {
  if (everythingGlob(target)) return "wipe";
  const lead = LEADING_EXPANSION.exec(target);
  if (lead) {
    const rest = target.slice(lead[0].length);
    if (/^[/.*]*$/.test(rest) || (rest.startsWith("/") && isProtected(rest))) return "wipe";
    return "unknown";
  }
  if (target.startsWith("/") && isProtected(target)) return "wipe";
  return /\$|^~/.test(target) ? "unknown" : null;
}

/** The targets of a forced recursive `rm` whose argv (program first) is `argv`, or [] when it is not one. */
function forcedRecursiveRmTargets(argv: string[]): string[] {
  const program = programName(argv[0]);
  if (program !== "rm" && !UNRESOLVED_PROGRAM.test(argv[0])) return [];
  const args = argv.slice(1);
  const end = args.indexOf("--");
  const options = (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith("-") && a !== "-");
  const short = options.filter((a) => !a.startsWith("--")).join("");
  // GNU getopt takes any unambiguous prefix of a long option: `--r`, `--recur`, `--f`, `--forc`.
  const long = (name: string) => options.some((o) => o.length >= 3 && name.startsWith(o));
  const recursive = /[rR]/.test(short) || long("--recursive");
  const force = /f/.test(short) || long("--force");
  if (!recursive || !force) return [];
  return end < 0 ? args.filter((a) => !a.startsWith("-") || a === "-") : [...args.slice(0, end).filter((a) => !a.startsWith("-")), ...args.slice(end + 1)];
}

/** Options of `find` that come before its start paths; `-D` takes the next word. */
const FIND_LEADING_OPTION = /^-(?:[HLP]|O\d*|D)$/;

/** The start paths of a `find` whose argv is `argv` (`.` when none is given). */
export function findStartPaths(argv: string[]): string[] {
  let k = 1;
  while (k < argv.length && FIND_LEADING_OPTION.test(argv[k])) k += argv[k] === "-D" ? 2 : 1;
  const paths: string[] = [];
  for (; k < argv.length && !/^[-(!)]/.test(argv[k]); k++) paths.push(argv[k]);
  return paths.length > 0 ? paths : ["."];
}

/** A word of a script that names `rm` as a command (`rm -rf "$1"`, `cd x && /bin/rm {}`). */
const RM_IN_SCRIPT = /(?:^|[\s;&|(){}`'"/])rm(?:$|[\s;&|)}`'"])/;

/**
 * The start paths of a `find` that deletes what it finds (`-delete`, or `-exec`/`-execdir`/`-ok`/
 * `-okdir` running `rm`, or running a shell whose words name `rm`: `-exec sh -c 'rm -rf "$1"' _ {} \;`), or [].
 */
function findDeletionTargets(argv: string[], unresolved = false): string[] {
  if (programName(argv[0]) !== "find") return [];
  // Where each action's command ends: the next `;` or `+` (found once, from the end), and its
  // program read with one memo for the line: copied and read from every `-exec` to its end, it
  // was quadratic (`find .` and 15,000 `-ok`: 4.4 s an intake; `-ok sudo` × 7,000: 6 s).
  const stop = findActionEnds(argv);
  // The first word at or after each index that names rm in a script, found once, from the end.
  const rmWord = new Array<number>(argv.length + 1);
  rmWord[argv.length] = argv.length;
  for (let k = argv.length - 1; k >= 0; k--) rmWord[k] = RM_IN_SCRIPT.test(argv[k]) ? k : rmWord[k + 1];
  const memo = new Map<string, ProgramFound>();
  // Each program word judged once for its action's end: past a wrapper's options (`-ok sudo -ok sudo … $x…`)
  // every action finds the same word, and reading it again for each was quadratic (1.3 s an intake).
  const judged = new Map<string, boolean>();
  const runsRm = (from: number, to: number): boolean => {
    const program = programAt(argv, from, to, memo);
    if (!program) return false;
    const key = `${program.at}|${to}`;
    let known = judged.get(key);
    if (known === undefined) {
      // An action whose program is an expansion the verifier cannot evaluate (`-exec $R {} +`) may run rm: read apart, escalated.
      if (unresolved) known = UNRESOLVED_PROGRAM.test(argv[program.at]);
      else if (program.name.toLowerCase() === "rm") known = true;
      else known = SCRIPT_SHELL.has(program.name.toLowerCase()) && rmWord[program.at + 1] < to;
      judged.set(key, known);
    }
    return known;
  };
  const deletes = (!unresolved && argv.includes("-delete")) || argv.some((a, k) => FIND_EXEC.has(a) && runsRm(k + 1, stop[k + 1]));
  return deletes ? findStartPaths(argv) : [];
}

/**
 * The program and arguments `c` runs (see invocationOf), with what `xargs` appends when it runs
 * the command: the words of its here-documents and here-strings or of a literal piped into it, or
 * the start paths of a `find` piped into it (the worst case of what that find prints).
 */
function effectiveArgv(c: SimpleCommand, previous: SimpleCommand | undefined, vars: ReadonlyMap<string, string>): string[] | null {
  const inv = invocationOf(c);
  if (!inv) return null;
  let argv = resolveProgram(inv.argv, vars);
  // A find's action programs are program words too (`R=rm; find / -exec $R {} +`): each action's program word, past
  // wrappers as a command's (`-exec sudo $R {} +`, review rv-54: read only right after the action), when a variable
  // assigned earlier, is its value's words. Found with one memo for the line (programAt), so linear.
  if (inv.name.toLowerCase() === "find") {
    const stop = findActionEnds(argv);
    const memo = new Map<string, ProgramFound>();
    const programs = new Set<number>();
    for (let k = 1; k < argv.length; k++) {
      if (!FIND_EXEC.has(argv[k])) continue;
      const found = programAt(argv, k + 1, stop[k + 1], memo);
      if (found) programs.add(found.at);
    }
    const words = argv;
    argv = words.flatMap((w, k) => (programs.has(k) ? resolveProgram([w], vars) : [w]));
  }
  if (!inv.viaXargs) return argv;
  const feeder = previous?.pipesInto ? invocationOf(previous) : null;
  return [...argv, ...(feeder?.name.toLowerCase() === "find" ? findStartPaths(feeder.argv) : stdinWords(c, previous))];
}

/** A program word that is only a variable, `$NAME` or `${NAME}`. */
const VARIABLE_PROGRAM = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$/;

/** `argv` with a program word that is a variable assigned earlier in the script (`R=rm; $R -rf /`) replaced by its value's words. */
function resolveProgram(argv: string[], vars: ReadonlyMap<string, string>): string[] {
  const m = VARIABLE_PROGRAM.exec(argv[0]);
  const value = m ? vars.get(m[1] ?? m[2]) : undefined;
  if (value === undefined) return argv;
  const words = value.split(/\s+/).filter((w) => w !== "");
  return words.length > 0 ? [...words, ...argv.slice(1)] : argv;
}

/**
 * The argv of each command of `parsed` (see effectiveArgv), a variable used as the program
 * resolved from the plain assignments (`NAME=value` alone as a command) before it in the same script.
 */
function commandArgvs(parsed: ParsedShell): (string[] | null)[] {
  const vars = new Map<string, string>();
  return parsed.commands.map((c, i) => {
    const argv = effectiveArgv(c, parsed.commands[i - 1], vars);
    if (argv === null) {
      for (const w of c.words) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(w);
        if (m) vars.set(m[1], m[2]);
      }
    }
    return argv;
  });
}

/** The paths a command removes recursively: the targets of a forced recursive `rm`, or the start paths of a deleting `find`. */
const removedTargets = (argv: string[]): string[] => [...forcedRecursiveRmTargets(argv), ...findDeletionTargets(argv)];

/** A recursive removal aimed at the root, a system directory, a home directory or everything; or a disk overwrite. */
function wipesRoot(argv: string[]): boolean {
  // Without regard to case, as `rm` and `find` (programName): `DD` runs /bin/dd on macOS.
  const program = programName(argv[0]);
  // A program that is still an unresolved expansion is judged by rmDependsOnExpansion (escalated), not here.
  if (!UNRESOLVED_PROGRAM.test(argv[0]) && removedTargets(argv).some((t) => rmTargetRisk(t) === "wipe")) return true;
  if (/^mkfs(\.|$)/.test(program)) return true;
  return program === "dd" && argv.slice(1).some((a) => a.startsWith("of=") && writesDevice(a.slice(3)));
}

/**
 * Whether a `dd` output path names a device: under `/dev/`, in any case of its letters as macOS's
 * default filesystem finds it (`/DEV/sda`; review rv-73), once resolved lexically as an rm target is
 * (`//dev/sda`, `/./dev/sda`, `/tmp/../dev/sda`; review rv-50: only a literal `of=/dev/` counted),
 * or were a leading expansion empty (`${x}/dev/sda`), as rmTargetRisk reads `$PREFIX/usr`, or its default
 * or alternate value (`${x:-/dev/sda}`).
 */
function writesDevice(path: string): boolean {
  const lead = LEADING_EXPANSION.exec(path);
  if (!lead) return underDev(path);
  const rest = path.slice(lead[0].length);
  // A default or alternate value, `${x:-/dev/sda}`, is what the shell writes when x is unset (or set): read too (review rv-54).
  const value = WORD_VALUE.exec(lead[0]);
  // Every expansion empty, and every one's default or alternate value taken, nested or in a row too
  // (review rv-56: `${x:-${y:-/dev/sda}}` and `${x:-}${y:-/dev/sda}` were allowed).
  return [rest, ...(value ? [value[1] + rest] : []), withoutParameterExpansions(path), withWordValues(path)].some(underDev);
}

/** An absolute path that resolves under `/dev/`, its letters in any case. */
const underDev = (path: string): boolean => path.startsWith("/") && resolveRmPath(path).toLowerCase().startsWith("/dev/");

/** The start of an expansion with a default or alternate value, `${name:-`, `${1-`, `${@:+`, …, at the position tested. */
const VALUE_OPERATOR = /\$\{(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]):?[-=+]/y;

/**
 * `word` with each parameter expansion that has a default or alternate value (`${x:-word}`, `${x-word}`,
 * `${x:=word}`, `${x:+word}`, …) replaced by that value, read the same way (`${x:-${y:-/dev/sda}}` is
 * `/dev/sda`), and every other expansion taken as empty, as withoutParameterExpansions reads it. Linear:
 * each `${`'s closing `}` is found with one stack, and a value's text is read where it stands.
 */
export function withWordValues(word: string): string {
  if (!word.includes("$")) return word;
  const close = closingBraces(word);
  const dropped = new Uint8Array(word.length);
  let out = "";
  for (let i = 0; i < word.length; i++) {
    const c = word[i];
    if (dropped[i]) continue;
    if (c !== "$") {
      out += c;
      continue;
    }
    VALUE_OPERATOR.lastIndex = i;
    const value = close[i] >= 0 ? VALUE_OPERATOR.exec(word) : null;
    if (value) {
      // The value is read on from here; the expansion's own `}` is dropped when reached.
      dropped[close[i]] = 1;
      i += value[0].length - 1;
      continue;
    }
    const end = expansionEnd(word, i, close);
    if (end < 0) out += c;
    else i = end;
  }
  return out;
}

/** A `${name:-word}`, `${name-word}`, `${name:=word}`, `${name=word}`, `${name:+word}` or `${name+word}` expansion, its word captured. */
const WORD_VALUE = /^\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=+]([^{}]*)\}$/;

/**
 * The chain score of a command line: one for each command chained after the first (a subshell
 * or group boundary alone does not chain), two for each command substitution, two for a command
 * that wipes the root (the usual payload of an injected command), counted through nested
 * substitutions and through the scripts a command hands to a shell (`bash -c "…"`, `eval "…"`, a
 * heredoc fed to `sh`); a script nested deeper than the parser reads counts two, as a
 * substitution does.
 */
export function chainScore(parsed: ParsedShell): number {
  let score = parsed.commands.filter((c) => c.chained).length;
  const argvs = commandArgvs(parsed);
  parsed.commands.forEach((c, i) => {
    const argv = argvs[i];
    if (argv && wipesRoot(argv)) score += 2;
    for (const sub of c.substitutions) score += 2 + chainScore(sub);
    for (const script of c.scripts) score += chainScore(script);
    // A script nested too deep to read is scored as a substitution: unread, so not trusted.
    score += 2 * c.unread;
  });
  return score;
}

/** Whether a recursive removal anywhere in `parsed` (substitutions and scripts included) has a target that depends on an expansion. */
export function rmDependsOnExpansion(parsed: ParsedShell): boolean {
  const argvs = commandArgvs(parsed);
  return parsed.commands.some((c, i) => {
    const argv = argvs[i];
    if (argv && removedTargets(argv).some((t) => rmTargetRisk(t) !== null)) return true;
    // A find whose action runs an unresolved program (`find / -exec $R {} +`) is judged as `$R -rf /` is: escalated when its start paths are at risk.
    if (argv && findDeletionTargets(argv, true).some((t) => rmTargetRisk(t) !== null || (t.startsWith("/") && isProtected(t)))) return true;
    return c.substitutions.some(rmDependsOnExpansion) || c.scripts.some(rmDependsOnExpansion);
  });
}

export const SEC_002: InputRule = {
  name: "SEC-002",
  trigger: `an argument, parsed as a shell command line, has a chain score of ${COMMAND_INJECTION_THRESHOLD} or more (chained commands 1 each, substitutions 2 each, a root wipe 2, including a deleting find); below that, a forced recursive rm or a deleting find whose target depends on an unexpanded variable escalates, unless a human_approval names this request's request_hash`,
  scope: "string arguments of tools in COMMAND_EXECUTION_TOOL, and their argv-shaped arguments joined into a command line",
  judge({ command, requestHash, humanApproval }) {
    if (!toolIn(COMMAND_EXECUTION_TOOL, command.tool as string)) return allow("not a command-execution tool");
    let unknown = false;
    for (const s of commandLines(command.params)) {
      const parsed = parseShell(s);
      const score = chainScore(parsed);
      if (score >= COMMAND_INJECTION_THRESHOLD) return deny(`SEC-002: command-injection pattern (chain score ${score} >= ${COMMAND_INJECTION_THRESHOLD})`);
      unknown ||= rmDependsOnExpansion(parsed);
    }
    if (!unknown) return allow();
    // The escalation asks a human: an approval of this exact request is that human's answer (as SEC-005's).
    if (humanApproval !== null && humanApproval.request_hash === requestHash) return allow(`SEC-002: recursive removal of a path that depends on an unexpanded variable, approved by ${humanApproval.approver}`);
    return escalate("SEC-002: recursive removal (forced recursive rm or a deleting find) of a path that depends on an unexpanded variable");
  },
};

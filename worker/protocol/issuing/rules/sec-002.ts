import { COMMAND_EXECUTION_TOOL, COMMAND_INJECTION_THRESHOLD, RM_PROTECTED_PATH } from "../scopes.js";
import { invocationOf, parseShell, stdinWords, type ParsedShell, type SimpleCommand } from "../shell.js";
import { allow, commandLines, deny, escalate, toolIn, type InputRule } from "./types.js";

/** A leading shell expansion the verifier cannot evaluate: `$NAME`, `${…}`, a special parameter, `~` or `~user`. */
const LEADING_EXPANSION = /^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|~[A-Za-z0-9._-]*)/;

/** `path` resolved lexically (repeated `/`, `.` and `..` folded; `..` at the root stays there), with a trailing `*` glob taken as its directory. */
export function resolveRmPath(path: string): string {
  const stack: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") stack.pop();
    else stack.push(seg);
  }
  if (stack.length > 0 && /^\.?\*$/.test(stack[stack.length - 1])) stack.pop();
  return "/" + stack.join("/");
}

const isProtected = (absolute: string): boolean => RM_PROTECTED_PATH.includes(resolveRmPath(absolute));

/**
 * How dangerous one target of a forced recursive `rm` is: "wipe" when it is or resolves to `/`
 * or a top-level system directory, or is everything here (`*`); "wipe" too when it starts with
 * an expansion and what follows is empty, `/`, a glob, or (were the expansion empty) a protected
 * path: `$HOME`, `${HOME}`, `"$HOME/"`, `~`, `$DIR/*`, `$PREFIX/usr`. "unknown" when it holds any
 * other expansion (`$BUILD/out`, `~/project`): what it removes depends on a value the verifier
 * cannot see. Null otherwise.
 */
export function rmTargetRisk(target: string): "wipe" | "unknown" | null {
  if (target === "*" || target === ".*") return "wipe";
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
  const program = argv[0].slice(argv[0].lastIndexOf("/") + 1);
  if (program !== "rm") return [];
  const args = argv.slice(1);
  const end = args.indexOf("--");
  const options = (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith("-") && a !== "-");
  const short = options.filter((a) => !a.startsWith("--")).join("");
  const recursive = /[rR]/.test(short) || options.includes("--recursive");
  const force = /f/.test(short) || options.includes("--force");
  if (!recursive || !force) return [];
  return end < 0 ? args.filter((a) => !a.startsWith("-") || a === "-") : [...args.slice(0, end).filter((a) => !a.startsWith("-")), ...args.slice(end + 1)];
}

/** Options of `find` that come before its start paths; `-D` takes the next word. */
const FIND_LEADING_OPTION = /^-(?:[HLP]|O\d*|D)$/;
/** Actions of `find` that run a command on each file found. */
const FIND_EXEC = new Set(["-exec", "-execdir", "-ok", "-okdir"]);

/** The start paths of a `find` whose argv is `argv` (`.` when none is given). */
export function findStartPaths(argv: string[]): string[] {
  let k = 1;
  while (k < argv.length && FIND_LEADING_OPTION.test(argv[k])) k += argv[k] === "-D" ? 2 : 1;
  const paths: string[] = [];
  for (; k < argv.length && !/^[-(!)]/.test(argv[k]); k++) paths.push(argv[k]);
  return paths.length > 0 ? paths : ["."];
}

/** The start paths of a `find` that deletes what it finds (`-delete`, or `-exec`/`-execdir`/`-ok`/`-okdir` running `rm`), or []. */
function findDeletionTargets(argv: string[]): string[] {
  if (argv[0].slice(argv[0].lastIndexOf("/") + 1) !== "find") return [];
  let deletes = argv.includes("-delete");
  argv.forEach((a, k) => {
    if (!FIND_EXEC.has(a)) return;
    const rest = argv.slice(k + 1);
    const stop = rest.findIndex((w) => w === ";" || w === "+");
    const words = stop < 0 ? rest : rest.slice(0, stop);
    if (invocationOf({ words, substitutions: [], heredocs: [], herestrings: [], pipesInto: false, chained: false, scripts: [], unread: 0 })?.name === "rm") deletes = true;
  });
  return deletes ? findStartPaths(argv) : [];
}

/**
 * The program and arguments `c` runs (see invocationOf), with what `xargs` appends when it runs
 * the command: the words of its here-documents and here-strings or of a literal piped into it, or
 * the start paths of a `find` piped into it (the worst case of what that find prints).
 */
function effectiveArgv(c: SimpleCommand, previous: SimpleCommand | undefined): string[] | null {
  const inv = invocationOf(c);
  if (!inv) return null;
  if (!inv.viaXargs) return inv.argv;
  const feeder = previous?.pipesInto ? invocationOf(previous) : null;
  return [...inv.argv, ...(feeder?.name === "find" ? findStartPaths(feeder.argv) : stdinWords(c, previous))];
}

/** The paths a command removes recursively: the targets of a forced recursive `rm`, or the start paths of a deleting `find`. */
const removedTargets = (argv: string[]): string[] => [...forcedRecursiveRmTargets(argv), ...findDeletionTargets(argv)];

/** A recursive removal aimed at the root, a system directory, a home directory or everything; or a disk overwrite. */
function wipesRoot(argv: string[]): boolean {
  const program = argv[0].slice(argv[0].lastIndexOf("/") + 1);
  if (removedTargets(argv).some((t) => rmTargetRisk(t) === "wipe")) return true;
  if (/^mkfs(\.|$)/.test(program)) return true;
  return program === "dd" && argv.slice(1).some((a) => /^of=\/dev\//.test(a));
}

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
  parsed.commands.forEach((c, i) => {
    const argv = effectiveArgv(c, parsed.commands[i - 1]);
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
  return parsed.commands.some((c, i) => {
    const argv = effectiveArgv(c, parsed.commands[i - 1]);
    if (argv && removedTargets(argv).some((t) => rmTargetRisk(t) !== null)) return true;
    return c.substitutions.some(rmDependsOnExpansion) || c.scripts.some(rmDependsOnExpansion);
  });
}

export const SEC_002: InputRule = {
  name: "SEC-002",
  trigger: `an argument, parsed as a shell command line, has a chain score of ${COMMAND_INJECTION_THRESHOLD} or more (chained commands 1 each, substitutions 2 each, a root wipe 2, including a deleting find); below that, a forced recursive rm or a deleting find whose target depends on an unexpanded variable escalates`,
  scope: "string arguments of tools in COMMAND_EXECUTION_TOOL, and their argv-shaped arguments joined into a command line",
  judge({ command }) {
    if (!toolIn(COMMAND_EXECUTION_TOOL, command.tool as string)) return allow("not a command-execution tool");
    let unknown = false;
    for (const s of commandLines(command.params)) {
      const parsed = parseShell(s);
      const score = chainScore(parsed);
      if (score >= COMMAND_INJECTION_THRESHOLD) return deny(`SEC-002: command-injection pattern (chain score ${score} >= ${COMMAND_INJECTION_THRESHOLD})`);
      unknown ||= rmDependsOnExpansion(parsed);
    }
    return unknown ? escalate("SEC-002: recursive removal (forced recursive rm or a deleting find) of a path that depends on an unexpanded variable") : allow();
  },
};

import { COMMAND_EXECUTION_TOOL, COMMAND_INJECTION_THRESHOLD, RM_PROTECTED_PATH } from "../scopes.js";
import { parseShell, programOf, type ParsedShell } from "../shell.js";
import { allow, argumentStrings, deny, escalate, toolIn, type InputRule } from "./types.js";

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

/** The targets of a forced recursive `rm` at `words[at]`, or [] when it is not one. */
function forcedRecursiveRmTargets(words: string[], at: number): string[] {
  const program = words[at].slice(words[at].lastIndexOf("/") + 1);
  if (program !== "rm") return [];
  const args = words.slice(at + 1);
  const end = args.indexOf("--");
  const options = (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith("-") && a !== "-");
  const short = options.filter((a) => !a.startsWith("--")).join("");
  const recursive = /[rR]/.test(short) || options.includes("--recursive");
  const force = /f/.test(short) || options.includes("--force");
  if (!recursive || !force) return [];
  return end < 0 ? args.filter((a) => !a.startsWith("-") || a === "-") : [...args.slice(0, end).filter((a) => !a.startsWith("-")), ...args.slice(end + 1)];
}

/** A recursive forced removal aimed at the root, a system directory, a home directory or everything; or a disk overwrite. */
function wipesRoot(words: string[], at: number): boolean {
  const program = words[at].slice(words[at].lastIndexOf("/") + 1);
  if (forcedRecursiveRmTargets(words, at).some((t) => rmTargetRisk(t) === "wipe")) return true;
  if (/^mkfs(\.|$)/.test(program)) return true;
  return program === "dd" && words.slice(at + 1).some((a) => /^of=\/dev\//.test(a));
}

/**
 * The chain score of a command line: one for each command chained after the first, two for each
 * command substitution, two for a command that wipes the root (the usual payload of an injected
 * command), counted through nested substitutions and through the scripts a command hands to a
 * shell (`bash -c "…"`, `eval "…"`, a heredoc fed to `sh`); a script nested deeper than the
 * parser reads counts two, as a substitution does.
 */
export function chainScore(parsed: ParsedShell): number {
  let score = Math.max(0, parsed.commands.length - 1);
  for (const c of parsed.commands) {
    const program = programOf(c);
    if (program && wipesRoot(c.words, program.at)) score += 2;
    for (const sub of c.substitutions) score += 2 + chainScore(sub);
    for (const script of c.scripts) score += chainScore(script);
    // A script nested too deep to read is scored as a substitution: unread, so not trusted.
    score += 2 * c.unread;
  }
  return score;
}

/** Whether a forced recursive `rm` anywhere in `parsed` (substitutions and scripts included) has a target that depends on an expansion. */
export function rmDependsOnExpansion(parsed: ParsedShell): boolean {
  return parsed.commands.some((c) => {
    const program = programOf(c);
    if (program && forcedRecursiveRmTargets(c.words, program.at).some((t) => rmTargetRisk(t) !== null)) return true;
    return c.substitutions.some(rmDependsOnExpansion) || c.scripts.some(rmDependsOnExpansion);
  });
}

export const SEC_002: InputRule = {
  name: "SEC-002",
  trigger: `an argument, parsed as a shell command line, has a chain score of ${COMMAND_INJECTION_THRESHOLD} or more (chained commands 1 each, substitutions 2 each, a root wipe 2); below that, a forced recursive rm whose target depends on an unexpanded variable escalates`,
  scope: "string arguments of tools in COMMAND_EXECUTION_TOOL",
  judge({ command }) {
    if (!toolIn(COMMAND_EXECUTION_TOOL, command.tool as string)) return allow("not a command-execution tool");
    let unknown = false;
    for (const s of argumentStrings(command.params)) {
      const parsed = parseShell(s);
      const score = chainScore(parsed);
      if (score >= COMMAND_INJECTION_THRESHOLD) return deny(`SEC-002: command-injection pattern (chain score ${score} >= ${COMMAND_INJECTION_THRESHOLD})`);
      unknown ||= rmDependsOnExpansion(parsed);
    }
    return unknown ? escalate("SEC-002: forced recursive rm of a path that depends on an unexpanded variable") : allow();
  },
};

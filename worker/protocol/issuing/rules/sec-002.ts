import { COMMAND_EXECUTION_TOOL, COMMAND_INJECTION_THRESHOLD } from "../scopes.js";
import { parseShell, programOf, type ParsedShell } from "../shell.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/** A recursive forced removal, or a disk overwrite, aimed at the filesystem root, a home directory or everything. */
function wipesRoot(words: string[], at: number): boolean {
  const program = words[at].slice(words[at].lastIndexOf("/") + 1);
  const args = words.slice(at + 1);
  if (program === "rm") {
    const flags = args.filter((a) => a.startsWith("-")).join("");
    const recursive = /r|R|--recursive/.test(flags);
    const force = /f|--force/.test(flags);
    return recursive && force && args.some((a) => ["/", "/*", "~", "~/", "~/*", "$HOME", "*", "/."].includes(a));
  }
  if (/^mkfs(\.|$)/.test(program)) return true;
  return program === "dd" && args.some((a) => /^of=\/dev\//.test(a));
}

/**
 * The chain score of a command line: one for each command chained after the first, two for each
 * command substitution, two for a command that wipes the root (the usual payload of an injected
 * command), counted through nested substitutions.
 */
export function chainScore(parsed: ParsedShell): number {
  let score = Math.max(0, parsed.commands.length - 1);
  for (const c of parsed.commands) {
    const program = programOf(c);
    if (program && wipesRoot(c.words, program.at)) score += 2;
    for (const sub of c.substitutions) score += 2 + chainScore(sub);
  }
  return score;
}

export const SEC_002: InputRule = {
  name: "SEC-002",
  trigger: `an argument, parsed as a shell command line, has a chain score of ${COMMAND_INJECTION_THRESHOLD} or more (chained commands 1 each, substitutions 2 each, a root wipe 2)`,
  scope: "string arguments of tools in COMMAND_EXECUTION_TOOL",
  judge({ command }) {
    if (!COMMAND_EXECUTION_TOOL.includes(command.tool as string)) return allow("not a command-execution tool");
    for (const s of argumentStrings(command.params)) {
      const score = chainScore(parseShell(s));
      if (score >= COMMAND_INJECTION_THRESHOLD) return deny(`SEC-002: command-injection pattern (chain score ${score} >= ${COMMAND_INJECTION_THRESHOLD})`);
    }
    return allow();
  },
};

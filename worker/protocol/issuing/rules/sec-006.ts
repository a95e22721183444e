import { COMMAND_EXECUTION_TOOL } from "../scopes.js";
import { parseShell, programOf, type ParsedShell } from "../shell.js";
import { allow, argumentStrings, deny, toolIn, type InputRule } from "./types.js";

export const FETCH_PRIMITIVE = new Set(["curl", "wget", "fetch", "aria2c", "lwp-download", "lwp-request", "tftp", "ftp", "invoke-webrequest", "iwr", "invoke-restmethod", "irm", "certutil", "bitsadmin"]);
export const EXEC_PRIMITIVE = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "python", "python2", "python3", "perl", "ruby", "node", "php", "eval", "source", ".", "iex", "invoke-expression", "powershell", "pwsh", "cmd", "cmd.exe"]);

/** A program's name as the sets list it: lowercase, a versioned interpreter by its family (`python3.11` is `python3`). */
const programName = (c: ParsedShell["commands"][number]) => (programOf(c)?.name.toLowerCase() ?? "").replace(/^(python[23]?|ruby|perl|php|node)[0-9.]*$/, "$1");
const fetches = (p: ParsedShell): boolean => p.commands.some((c) => FETCH_PRIMITIVE.has(programName(c)) || c.substitutions.some(fetches));

/**
 * A fetch primitive followed by an execution primitive in the same parsed command line
 * (heredoc bodies excluded, unless a shell runs them): `curl … | sh`, `wget … && bash x`, an
 * execution primitive whose arguments substitute a fetch, `bash -c "$(curl …)"`, or any of these
 * inside a script handed to a shell (`bash -c "curl … | sh"`, `eval "…"`, `sh <<EOF … EOF`).
 */
export function downloadExecutes(p: ParsedShell): boolean {
  let fetched = false;
  for (const c of p.commands) {
    const name = programName(c);
    if (EXEC_PRIMITIVE.has(name) && (fetched || c.substitutions.some(fetches) || (c.processSubstitutions ?? []).some(fetches))) return true;
    if (FETCH_PRIMITIVE.has(name)) fetched = true;
    if (c.substitutions.some(downloadExecutes) || c.scripts.some(downloadExecutes)) return true;
  }
  return false;
}

export const SEC_006: InputRule = {
  name: "SEC-006",
  trigger: "an argument, parsed as a shell command line outside heredoc bodies (inside the scripts a command hands to a shell included), has a fetch primitive followed by an execution primitive",
  scope: "string arguments of tools in COMMAND_EXECUTION_TOOL",
  judge({ command }) {
    if (!toolIn(COMMAND_EXECUTION_TOOL, command.tool as string)) return allow("not a command-execution tool");
    for (const s of argumentStrings(command.params)) if (downloadExecutes(parseShell(s))) return deny("SEC-006: download-to-execute chain");
    return allow();
  },
};

import { COMMAND_EXECUTION_TOOL } from "../scopes.js";
import { invocationOf, isRedirection, parseShell, programOf, type ParsedShell, type SimpleCommand } from "../shell.js";
import { allow, argumentStrings, deny, toolIn, type InputRule } from "./types.js";

export const FETCH_PRIMITIVE = new Set(["curl", "wget", "fetch", "aria2c", "lwp-download", "lwp-request", "tftp", "ftp", "invoke-webrequest", "iwr", "invoke-restmethod", "irm", "certutil", "bitsadmin"]);
export const EXEC_PRIMITIVE = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "python", "python2", "python3", "perl", "ruby", "node", "php", "eval", "source", ".", "iex", "invoke-expression", "powershell", "pwsh", "cmd", "cmd.exe"]);

/** A program's name as the sets list it: lowercase, a versioned interpreter by its family (`python3.11` is `python3`). */
const programName = (c: ParsedShell["commands"][number]) => (programOf(c)?.name.toLowerCase() ?? "").replace(/^(python[23]?|ruby|perl|php|node)[0-9.]*$/, "$1");
const fetches = (p: ParsedShell): boolean => p.commands.some((c) => FETCH_PRIMITIVE.has(programName(c)) || c.substitutions.some(fetches));

/**
 * A path's last segment, its trailing slashes dropped. Read in linear time: `/\/+$/` was tried at
 * every slash and ran to the end of each run (60,000 slashes and an `x`: 2.7 s an intake).
 */
export const baseName = (path: string): string => {
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  const trimmed = path.slice(0, end);
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
};
/**
 * `word` from the first `?` or `#` after its last line break on dropped, as `/[?#].*$/` dropped it
 * (`.` stops at a line break), read in linear time: the expression ran from every `?` to the next
 * line break (`'http://a/` + 60,000 `?` + a newline: 1.2 s an intake).
 */
export const withoutQuery = (word: string): string => {
  const line = Math.max(word.lastIndexOf("\n"), word.lastIndexOf("\r"), word.lastIndexOf("\u2028"), word.lastIndexOf("\u2029")) + 1;
  const q = word.slice(line).search(/[?#]/);
  return q < 0 ? word : word.slice(0, line + q);
};
/** The file name a URL's path ends in, as `curl -O` and `wget` name the download. */
const urlFileName = (word: string): string | null => (/^[a-z][a-z0-9+.-]*:\/\//i.test(word) ? baseName(withoutQuery(word).replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "")) || null : null);

/**
 * A cluster of short options holding `-O` (`-O`, `-sLO`): what `/^-[A-Za-z]*O[A-Za-z]*$/` matched,
 * read in linear time (the expression tried every `O` of a run and ran the rest of it each time:
 * `curl -` and 60,000 `O` and a `1` took 1.3 s an intake).
 */
const remoteNameCluster = (word: string): boolean => /^-[A-Za-z]*$/.test(word) && word.includes("O");

/**
 * The base names of the files a fetch command writes its download to: curl's `-o F`/`--output F`
 * (or the URL's file name with `-O`/`--remote-name`), wget's `-O F`/`--output-document F` (or
 * the URL's file name, its default), aria2c's `-o F`, and a `>`/`>>` redirection of its output.
 */
function downloadedFiles(c: SimpleCommand, name: string): string[] {
  const inv = invocationOf(c);
  if (!inv) return [];
  const out: string[] = [];
  const args = inv.argv.slice(1);
  const urls = args.map(urlFileName).filter((f): f is string => f !== null);
  /** The files an output option names: `--long F`, `--long=F`, `-x F`, `-xF`, or a cluster `-sSx F` / `-sSxF`. */
  const named = (letter: string, long: string): boolean => {
    let found = false;
    const take = (file: string | undefined) => {
      found = true;
      if (file !== undefined) out.push(baseName(file));
    };
    args.forEach((a, i) => {
      if (a === long) take(args[i + 1]);
      else if (a.startsWith(long + "=")) take(a.slice(long.length + 1));
      else if (/^-[A-Za-z]/.test(a)) {
        const k = a.indexOf(letter);
        if (k > 0 && /^[A-Za-z]*$/.test(a.slice(1, k))) take(k === a.length - 1 ? args[i + 1] : a.slice(k + 1));
      }
    });
    return found;
  };
  if (name === "curl") {
    named("o", "--output");
    if (args.some((a) => a === "--remote-name" || a === "--remote-name-all" || remoteNameCluster(a))) out.push(...urls);
  } else if (name === "wget") {
    if (!named("O", "--output-document")) out.push(...urls);
  } else if (name === "aria2c") {
    if (!named("o", "--out")) out.push(...urls);
  }
  c.words.forEach((w, i) => /^\d*>>?$/.test(w) && isRedirection(w) && c.words[i + 1] !== undefined && out.push(baseName(c.words[i + 1])));
  return out.filter((f) => f !== "" && f !== "-" && f !== "/dev/null");
}

/**
 * A fetch primitive followed by an execution primitive in the same parsed command line
 * (heredoc bodies excluded, unless a shell runs them): `curl … | sh`, `wget … && bash x`, an
 * execution primitive whose arguments substitute a fetch, `bash -c "$(curl …)"`, or any of these
 * inside a script handed to a shell (`bash -c "curl … | sh"`, `eval "…"`, `sh <<EOF … EOF`).
 */
export function downloadExecutes(p: ParsedShell): boolean {
  let fetched = false;
  // What earlier fetches wrote: a later command that runs one of them by path (`./i.sh`, `/tmp/i`) executes the download.
  const downloads = new Set<string>();
  for (const c of p.commands) {
    const name = programName(c);
    if (EXEC_PRIMITIVE.has(name) && (fetched || c.substitutions.some(fetches) || (c.processSubstitutions ?? []).some(fetches))) return true;
    const inv = invocationOf(c);
    const program = inv?.argv[0] ?? "";
    // A bare name is a PATH lookup, unless the command sets PATH itself (`PATH=. i`, `env PATH=/tmp i`): then it can be the download.
    const setsPath = inv !== null && c.words.slice(0, inv.at).some((w) => w.startsWith("PATH="));
    if ((program.includes("/") || setsPath) && downloads.has(baseName(program))) return true;
    if (FETCH_PRIMITIVE.has(name)) {
      fetched = true;
      downloadedFiles(c, name).forEach((f) => downloads.add(f));
    }
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

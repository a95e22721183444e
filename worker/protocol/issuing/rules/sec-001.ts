import { classifyHost, HOST_WORK, HostTooLong, urlHosts } from "../hosts.js";
import { COMMAND_EXECUTION_TOOL } from "../scopes.js";
import { parseShell, withoutParameterExpansions } from "../shell.js";
import { shellWords } from "./sec-004.js";
import { allow, argumentStrings, deny, toolIn, type InputRule } from "./types.js";

/**
 * The strings of one argument read as URLs: the argument itself and, when the tool runs its
 * arguments as a shell command line (COMMAND_EXECUTION_TOOL), each word of that line as a shell
 * splits it (quotes removed; substitutions and scripts handed to a shell included) and what
 * follows an `=` in a word (`--url=…`): there the words are the arguments of the command, so
 * `curl http://169.254.169.254/` is judged as `["curl", "http://169.254.169.254/"]` is.
 */
function urlCandidates(text: string, commandLine: boolean): string[] {
  if (!commandLine) return [text];
  const out = new Set([text]);
  for (const word of shellWords(parseShell(text), [])) {
    // A parameter expansion in a word is also read as empty, as a shell expands an unset variable:
    // `curl http://169.254.169.254$z/` fetches 169.254.169.254 (the worst case of a value the
    // verifier cannot see, as SEC-004 reads `..$x`).
    const bare = withoutParameterExpansions(word);
    for (const w of bare === word ? [word] : [word, bare]) {
      out.add(w);
      const eq = w.indexOf("=");
      if (eq >= 0) out.add(w.slice(eq + 1));
    }
  }
  return [...out];
}


/**
 * SEC-001: a URL argument whose host, read literally or by the WHATWG URL parser (NFKC-folded
 * either way), is loopback, private or link-local. Either reading hitting is enough: a client
 * may use either. A command-execution tool's arguments are also read word by word. A URL whose
 * host holds characters outside ASCII and passes MAX_IDNA_HOST (256) characters is denied unread:
 * the parser's IDNA step reads such a host in quadratic time, and no DNS name is that long; so is
 * a Command whose URLs together pass HOST_WORK of that work.
 */
export const SEC_001: InputRule = {
  name: "SEC-001",
  trigger: "an argument (or a word of a command-execution tool's command line) is a URL whose host, read literally or by the WHATWG URL parser after NFKC folding (IPv4 in any numeric form, IPv6 incl. mapped forms, localhost), is loopback, private, link-local or unspecified",
  scope: "string arguments of any tool, and the shell words of the string arguments of tools in COMMAND_EXECUTION_TOOL",
  judge({ command }) {
    const commandLine = toolIn(COMMAND_EXECUTION_TOOL, command.tool as string);
    // One IDNA work budget for every URL this Command holds (hosts.ts, HOST_WORK).
    const work = { left: HOST_WORK };
    for (const s of argumentStrings(command.params)) {
      for (const candidate of urlCandidates(s, commandLine)) {
        let hosts: string[];
        try {
          hosts = urlHosts(candidate, work);
        } catch (err) {
          // A host the URL parser would read in quadratic time is not read: fail closed.
          if (err instanceof HostTooLong) return deny(`SEC-001: ${err.message}`);
          throw err;
        }
        for (const host of hosts) {
          const cls = classifyHost(host);
          if (cls) return deny(`SEC-001: URL argument targets a ${cls} host (${host})`);
        }
      }
    }
    return allow();
  },
};

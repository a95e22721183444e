import { urlHost } from "../hosts.js";
import { BLOCKED_ABSOLUTE_PATH } from "../scopes.js";
import { parseShell, type ParsedShell } from "../shell.js";
import { globSegment } from "./sec-002.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/**
 * Where a path containing a `..` segment lands, or null when it has none or never climbs out of
 * where it starts. An absolute path is resolved from `/`; a relative one is judged only if it
 * climbs above its own start, and then what follows is read from `/` (the cwd is unknown, so the
 * worst case is assumed). `\` counts as a separator and `%2e`/`%2f` are decoded first.
 */
export function traversalTarget(path: string): string | null {
  let p = path.replace(/%2e/gi, ".").replace(/%2f/gi, "/").replace(/%5c/gi, "\\").replace(/\\/g, "/");
  if (p.startsWith("~/")) p = p.slice(1);
  // A segment that is `..` (or `.`) once its variable expansions are taken as empty (`..$x`,
  // `.${x}.`) is read as that: the worst case of a value the verifier cannot see.
  const segments = p.split("/").map((seg) => {
    const bare = seg.replace(VARIABLE, "");
    return bare !== seg && (bare === ".." || bare === ".") ? bare : seg;
  });
  if (!segments.includes("..")) return null;
  const absolute = p.startsWith("/");
  const stack: string[] = [];
  let escaped = false;
  for (const seg of segments) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (stack.length > 0) stack.pop();
      else escaped = true;
    } else stack.push(seg);
  }
  return absolute || escaped ? "/" + stack.join("/") : null;
}

/** A variable expansion, `$name` or `${name}`. */
const VARIABLE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * Whether a resolved path is a BLOCKED_ABSOLUTE_PATH or below one; a segment holding a glob
 * (`/e*`/shadow, `/etc/shado?`) counts when it could match the blocked path's segment there.
 */
export const isBlockedPath = (path: string): boolean =>
  BLOCKED_ABSOLUTE_PATH.some((b) => path === b || path.startsWith(b + "/") || (b.startsWith("/.") && (path.includes(b + "/") || path.endsWith(b)))) ||
  (/[*?[]/.test(path) && BLOCKED_ABSOLUTE_PATH.some((b) => globReaches(path, b)));

/** Whether the glob path `path` (absolute, resolved) could name `blocked` or a path below it. */
function globReaches(path: string, blocked: string): boolean {
  const ps = path.split("/").filter((s) => s !== "");
  const bs = blocked.split("/").filter((s) => s !== "");
  return ps.length >= bs.length && bs.every((b, j) => globSegment(ps[j]).test(b));
}

/** Every word of a parsed command line, substitutions and scripts included. */
export function shellWords(parsed: ParsedShell, out: string[]): string[] {
  for (const c of parsed.commands) {
    out.push(...c.words);
    c.substitutions.forEach((p) => shellWords(p, out));
    c.scripts.forEach((p) => shellWords(p, out));
  }
  return out;
}

/**
 * Where a shell would split words, and more: whitespace, an unquoted `$IFS`/`${IFS}`, and the
 * characters that end a word or a command or separate brace-expansion alternatives.
 */
const WORD_BREAK = /\s+|\$\{IFS\}|\$IFS(?![A-Za-z0-9_])|[(){};|&<>,]/;

/** The path of a `file:` URL with an empty or `localhost` host (`file:///p`, `file://localhost/p`, `file:/p`), or null. */
export function fileUrlPath(text: string): string | null {
  const m = /^file:(?:\/\/(?:localhost)?(?=\/)|(?=\/(?!\/)))(\/[^?#]*)/i.exec(text);
  return m ? m[1] : null;
}

/**
 * The strings of one argument judged as paths: the whole string, each of its words (split at
 * whitespace, `$IFS`, `( ) { } ; | & < > ,`, and as a shell splits them, quotes removed), and
 * within a word what follows a leading redirection (`<`, `2>`) or an `=` (`--file=…`, `if=…`). A
 * word is a path from its own start, so `cat ../../etc/shadow` climbs. Absolute URLs are not
 * paths, except that a local `file:` URL is read as its path (`file:///tmp/../etc/shadow`).
 */
export function pathCandidates(text: string): string[] {
  const out = new Set<string>();
  if (urlHost(text) === null) out.add(text);
  for (const raw of [text, ...text.split(WORD_BREAK), ...shellWords(parseShell(text), [])]) {
    const word = raw.replace(/^['"]+|['"]+$/g, "");
    const local = fileUrlPath(word);
    if (local !== null) out.add(local);
    if (word === "" || urlHost(word) !== null) continue;
    out.add(word);
    const unredirected = word.replace(/^(?:\d*[<>]+&?|[|&(]+)/, "");
    out.add(unredirected);
    for (let at = unredirected.indexOf("="); at >= 0; at = unredirected.indexOf("=", at + 1)) out.add(unredirected.slice(at + 1));
  }
  return [...out];
}

export const SEC_004: InputRule = {
  name: "SEC-004",
  trigger: "a path argument, or a word of an argument (or the path of a local file: URL), contains a `..` traversal and resolves to a BLOCKED_ABSOLUTE_PATH or below it",
  scope: "string arguments of any tool and their words, absolute URLs other than local file: URLs excepted",
  judge({ command }) {
    for (const s of argumentStrings(command.params)) {
      for (const path of pathCandidates(s)) {
        const target = traversalTarget(path);
        if (target !== null && isBlockedPath(target)) return deny(`SEC-004: path traversal reaches ${target}`);
      }
    }
    return allow();
  },
};

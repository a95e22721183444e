import { trimEdges, urlHost } from "../hosts.js";
import { BLOCKED_ABSOLUTE_PATH } from "../scopes.js";
import { parseShell, withoutParameterExpansions, type ParsedShell } from "../shell.js";
import { globSegment } from "./sec-002.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/** A quote, trimmed from a word's ends. */
const QUOTE = /^['"]$/;

/**
 * Where a path containing a `..` segment lands, or null when it has none or never climbs out of
 * where it starts. An absolute path is resolved from `/`; a relative one is judged only if it
 * climbs above its own start, and then what follows is read from `/` (the cwd is unknown, so the
 * worst case is assumed). `\` counts as a separator and `%2e`/`%2f` are decoded first.
 */
export function traversalTarget(path: string): string | null {
  // A leading `~`, `~user` or plain variable names some directory: read as empty, the path is absolute
  // (`~/…` always was; `~root/../etc/shadow` and `$HOME/../etc/shadow` read /etc/shadow, review rv-50).
  let p = decodePath(path).replace(LEADING_HOME, "");
  const segments = p.split("/").map(bareSegment);
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

/**
 * A leading tilde prefix (`~`, `~user`, and `~+`/`~-`, the working directories, or `~+1`/`~-2`, the directory
 * stack's: review rv-56, `cat ~+1/../etc/shadow` was allowed), plain variable or
 * positional or special parameter (`$1`, `${1}`, `$@`) followed by `/`: the worst case of a directory the verifier
 * cannot see is its being `/` (review rv-54: `cat ~+/../etc/shadow`, which is `./../etc/shadow`, and
 * `cat $1/../etc/shadow` were allowed while `cat ../etc/shadow` is denied).
 */
const LEADING_DIRECTORY = String.raw`~[+-][0-9]*|~[A-Za-z0-9._-]*|\$\{(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]`;
const LEADING_HOME = new RegExp(`^(?:${LEADING_DIRECTORY})(?=/)`);
/** LEADING_HOME as a whole segment (the part of a segment after an `=`). */
const LEADING_HOME_WHOLE = new RegExp(`^(?:${LEADING_DIRECTORY})$`);

/** `%2e`, `%2f`, `%5c` decoded and `\` read as `/`, as a path is judged. */
const decodePath = (path: string): string => path.replace(/%2e/gi, ".").replace(/%2f/gi, "/").replace(/%5c/gi, "\\").replace(/\\/g, "/");

/**
 * A segment that is `..` (or `.`) once its variable expansions are taken as empty (`..$x`,
 * `.${x}.`) is read as that: the worst case of a value the verifier cannot see.
 */
function bareSegment(seg: string): string {
  // Every parameter expansion, as SEC-001 and SEC-002 read them: `${x:-}`, `${x:-${y}}`, `$1`, `$@`, `$-`
  // too (review rv-54: `/tmp/..${x:-}/etc/shadow` and `/tmp/..$1/etc/shadow` were allowed).
  const bare = withoutParameterExpansions(seg);
  return bare !== seg && (bare === ".." || bare === ".") ? bare : seg;
}

/**
 * Whether a resolved path is a BLOCKED_ABSOLUTE_PATH or below one; a segment holding a glob
 * (`/e*`/shadow, `/etc/shado?`) counts when it could match the blocked path's segment there.
 */
export const isBlockedPath = (written: string): boolean => {
  const path = foldedPath(written);
  return blockedFolded(path);
};

/**
 * A path with its literal segments lowercased and its glob segments as written: a blocked path's
 * name is compared without regard to case, as macOS's default filesystem finds it (`/ETC/passwd`,
 * `~/.SSH/id_rsa`; review rv-54), as SEC-002 compares RM_PROTECTED_PATH since 0.2.34, while a glob
 * matches case-sensitively, as bash's does. Every BLOCKED_ABSOLUTE_PATH is lowercase.
 */
const foldedSegment = (seg: string): string => (/[*?[]/.test(seg) ? seg : seg.toLowerCase());
const foldedPath = (path: string): string => path.split("/").map(foldedSegment).join("/");

const blockedFolded = (path: string): boolean =>
  BLOCKED_ABSOLUTE_PATH.some((b) => path === b || path.startsWith(b + "/") || (b.startsWith("/.") && (path.includes(b + "/") || path.endsWith(b)))) ||
  (/[*?[]/.test(path) && (BLOCKED_ABSOLUTE_PATH.some((b) => globReaches(path, b)) || dottedGlobFrom(path.split("/").filter((s) => s !== ""))[0] === 1));

/** The `/.`-rooted blocked paths (`/.ssh`, `/.aws`, `/.config/gcloud`), blocked at any depth, as their segments. */
const DOTTED_BLOCKED: readonly (readonly string[])[] = BLOCKED_ABSOLUTE_PATH.filter((b) => b.startsWith("/.")).map((b) => b.split("/").filter((x) => x !== ""));
/** Every segment name of DOTTED_BLOCKED, and for each blocked path the index of each of its segments there. */
const DOTTED_NAMES: readonly string[] = [...new Set(DOTTED_BLOCKED.flat())];
const DOTTED_INDEX: readonly (readonly number[])[] = DOTTED_BLOCKED.map((parts) => parts.map((p) => DOTTED_NAMES.indexOf(p)));

/**
 * Which DOTTED_NAMES a glob segment could match (a bit each), compiled once per segment for the
 * Command SEC-004 is judging (reset by its judge; capped): a path is judged in several readings, so
 * its segments came back to be compiled ten times (`=/.s?` x 12,000: 0.4 s).
 */
let dottedMatches = new Map<string, number>();
const DOTTED_MEMO_MAX = 1 << 16;
function dottedBits(seg: string): number {
  let bits = dottedMatches.get(seg);
  if (bits === undefined) {
    const matcher = globSegment(seg);
    bits = DOTTED_NAMES.reduce((acc, name, i) => (matcher.test(name) ? acc | (1 << i) : acc), 0);
    if (dottedMatches.size >= DOTTED_MEMO_MAX) dottedMatches = new Map();
    dottedMatches.set(seg, bits);
  }
  return bits;
}

/**
 * For each m, whether the segments of `names` from m on hold, at any level, a run whose glob
 * segments could name a `/.`-rooted blocked path (`/x/.ss?/id_rsa`, `/x/.a[w]s`, `/x/.config/gclou*`):
 * those are blocked at any depth, and a glob there was read only at the root (review rv-50). A
 * glob's first segment must begin with a literal `.`, as bash (without dotglob) matches a leading
 * dot, so `/x/*` is not `/x/.ssh`. Each segment is compiled once (dottedBits): linear.
 */
function dottedGlobFrom(names: readonly string[]): Uint8Array {
  const out = new Uint8Array(names.length + 1);
  const isGlob = names.map((n) => /[*?[]/.test(n));
  const matches = (i: number, part: string, bit: number) => names[i] === part || (isGlob[i] && (dottedBits(names[i]) & (1 << bit)) !== 0);
  for (let m = names.length - 1; m >= 0; m--) {
    const here =
      names[m].startsWith(".") &&
      (isGlob[m] || isGlob[m + 1] === true) &&
      DOTTED_BLOCKED.some((parts, b) => names.length - m >= parts.length && parts.every((part, j) => matches(m + j, part, DOTTED_INDEX[b][j])));
    out[m] = out[m + 1] | (here ? 1 : 0);
  }
  return out;
}

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
export function blockedTraversal(text: string): string | null {
  const judge = (path: string): string | null => {
    const target = traversalTarget(path);
    return target !== null && isBlockedPath(target) ? target : null;
  };
  let found = urlHost(text) === null ? judge(text) : null;
  if (found !== null) return found;
  for (const raw of [text, ...text.split(WORD_BREAK), ...shellWords(parseShell(text), [])]) {
    // Quotes at either end trimmed in linear time (the expression /^['"]+|['"]+$/g ran to the end of every run of quotes inside).
    const word = trimEdges(raw, QUOTE);
    const local = fileUrlPath(word);
    if (local !== null && (found = judge(local)) !== null) return found;
    if (word === "" || urlHost(word) !== null) continue;
    if ((found = judge(word)) !== null) return found;
    const unredirected = word.replace(/^(?:\d*[<>]+&?|[|&(]+)/, "");
    if ((found = judge(unredirected)) !== null || (found = blockedAfterEquals(unredirected)) !== null) return found;
  }
  return null;
}

/**
 * The first of the paths that follow each `=` of `word` (in order) that traversalTarget resolves
 * to a blocked path (isBlockedPath), as that target, or null; in one pass over the word. Resolving
 * each such suffix apart costs its length, so a word of many `=` took time quadratic in its length
 * (60 KB of `=/` took 21 s).
 *
 * A suffix begins inside one segment of the word (its `/`-separated parts, read as traversalTarget
 * reads them) and goes on through all the segments after that one. Resolved from the left, a `..`
 * removes the nearest segment before it that is still there, and which one that is does not depend
 * on where the resolution began, as long as it began before that segment. So one resolution of the
 * whole word tells, for every segment s, which segments from s on survive (those no later `..`
 * removes: a suffix of one list, the survivors) and how many of the `..` from s on find nothing of
 * the suffix left to remove, so climb above its start. What the suffix's first, partial segment
 * does then follows from what it is: nothing (the suffix is absolute), `..`, `.`, or a name, which
 * the first climbing `..` removes. Only the last `=` of a segment can leave a partial segment that
 * is not a name (any other holds the next `=`).
 */
export function blockedAfterEquals(word: string): string | null {
  const p = decodePath(word);
  if (!p.includes("=")) return null;
  const raw = p.split("/");
  const segs = raw.map(bareSegment);
  const n = segs.length;
  const isName = (seg: string) => seg !== "" && seg !== "." && seg !== "..";
  const removed = new Uint8Array(n);
  const open: number[] = [];
  for (let i = 0; i < n; i++) {
    if (segs[i] === "..") {
      const j = open.pop();
      if (j !== undefined) removed[j] = 1;
    } else if (isName(segs[i])) open.push(i);
  }
  const survivors: string[] = [];
  const survivorAt: number[] = [];
  for (let i = 0; i < n; i++) {
    if (isName(segs[i]) && !removed[i]) {
      survivors.push(segs[i]);
      survivorAt.push(i);
    }
  }
  // From segment s on: climbs[s], the `..` that climb above s; traverses[s], whether any `..` is
  // there; kept[s], the first survivor at or after s.
  const climbs = new Int32Array(n + 1);
  const traverses = new Uint8Array(n + 1);
  const kept = new Int32Array(n + 1);
  kept[n] = survivors.length;
  for (let s = n - 1, k = survivors.length; s >= 0; s--) {
    const dots = segs[s] === "..";
    climbs[s] = climbs[s + 1] + (dots ? 1 : 0) - (isName(segs[s]) && removed[s] ? 1 : 0);
    traverses[s] = traverses[s + 1] | (dots ? 1 : 0);
    if (k > 0 && survivorAt[k - 1] === s) k--;
    kept[s] = k;
  }
  const blocked = survivorsBlocked(survivors);
  let seg = 0;
  let segStart = 0;
  for (let q = p.indexOf("="); q >= 0; q = p.indexOf("=", q + 1)) {
    while (seg + 1 < n && segStart + raw[seg].length < q) {
      segStart += raw[seg].length + 1;
      seg++;
    }
    const segEnd = segStart + raw[seg].length;
    if (q + 1 === p.length) break;
    const rest = seg + 1;
    const last = p.indexOf("=", q + 1);
    const partial = last >= 0 && last < segEnd ? null : p.slice(q + 1, segEnd);
    let resolves: boolean;
    // Nothing, or a leading `~`, `~user` or plain variable read as empty (LEADING_HOME): the suffix is absolute.
    if (partial === "" || (partial !== null && segEnd < p.length && LEADING_HOME_WHOLE.test(partial))) resolves = traverses[rest] === 1;
    else if (partial === null) resolves = climbs[rest] >= 2;
    else {
      const bare = bareSegment(partial);
      resolves = bare === ".." || (bare === "." ? climbs[rest] >= 1 : climbs[rest] >= 2);
    }
    if (resolves && blocked(kept[rest])) return "/" + survivors.slice(kept[rest]).join("/");
  }
  return null;
}

/**
 * Whether the path "/" + names.slice(m).join("/") is blocked (isBlockedPath), for any m, each
 * answered once, in time independent of the path's length but for the glob segments it reads.
 */
function survivorsBlocked(written: readonly string[]): (m: number) => boolean {
  const names = written.map(foldedSegment);
  const blocked = BLOCKED_ABSOLUTE_PATH.map((b) => ({ b, parts: b.split("/").filter((x) => x !== "") }));
  const at = (m: number, parts: readonly string[]) => parts.every((part, j) => names[m + j] === part);
  // Whether a `/.`-rooted blocked path (`/.ssh`) appears anywhere from m on, and whether a glob character does.
  const dotted = new Uint8Array(names.length + 1);
  const dottedGlob = dottedGlobFrom(names);
  const glob = new Uint8Array(names.length + 1);
  for (let m = names.length - 1; m >= 0; m--) {
    dotted[m] = dotted[m + 1] | (blocked.some(({ b, parts }) => b.startsWith("/.") && at(m, parts)) ? 1 : 0);
    glob[m] = glob[m + 1] | (/[*?[]/.test(names[m]) ? 1 : 0);
  }
  // Each m answered once: the `=` of one segment all ask for the same m, and a glob segment is read
  // in time linear in its length (`=` x 30,000, `/../../`, `*` x 30,000 and `x`: 11 s an intake).
  const answered = new Map<number, boolean>();
  return (m) => {
    let answer = answered.get(m);
    if (answer === undefined) {
      answer =
        dotted[m] === 1 ||
        dottedGlob[m] === 1 ||
        blocked.some(({ parts }) => at(m, parts)) ||
        (glob[m] === 1 && blocked.some(({ parts }) => names.length - m >= parts.length && parts.every((part, j) => globSegment(names[m + j]).test(part))));
      answered.set(m, answer);
    }
    return answer;
  };
}

export const SEC_004: InputRule = {
  name: "SEC-004",
  trigger: "a path argument, or a word of an argument (or the path of a local file: URL), contains a `..` traversal and resolves to a BLOCKED_ABSOLUTE_PATH or below it",
  scope: "string arguments of any tool and their words, absolute URLs other than local file: URLs excepted",
  judge({ command }) {
    dottedMatches = new Map();
    for (const s of argumentStrings(command.params)) {
      const target = blockedTraversal(s);
      if (target !== null) return deny(`SEC-004: path traversal reaches ${target}`);
    }
    return allow();
  },
};

/**
 * A structural reading of a shell command line, enough for SEC-002 and SEC-006: heredoc bodies
 * set aside (they are data, not commands, unless a shell reads them), then split into simple
 * commands at `;`, `&`, `&&`, `||`, `|` and newlines (chained) and at `(`, `)` (a subshell or group
 * boundary, not chained), respecting quotes and backslash escapes. Words also break at an unquoted
 * `$IFS`/`${IFS}` and around redirection operators (`cat<file` is `cat`, `<`, `file`), and an
 * unquoted one-level brace expansion (`{cat,file}`, `a{b,c}`) is expanded. ANSI-C quoting (`$'\x72m'`)
 * is decoded into the word.
 * Command substitutions (`$(…)`, backticks) are parsed recursively and reported with the command
 * they sit in, and so is any text a shell is handed to run: `sh|bash|zsh|dash|ksh|ash -c
 * "<script>"`, `eval "<script>"`, and the standard input of a shell given no script file (its
 * heredoc or here-string, or `cat <<EOF`, `echo …`, `printf …` piped into it). Nesting, of
 * either kind, is read to MAX_SHELL_DEPTH levels.
 */

/** How deep substitutions and scripts inside scripts are read. */
export const MAX_SHELL_DEPTH = 8;

/** Shells whose `-c` argument, or whose standard input, is a script. */
export const SCRIPT_SHELL: ReadonlySet<string> = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"]);

export interface SimpleCommand {
  /** Words after quote removal; substitutions appear as their literal text. */
  words: string[];
  /** The commands inside each substitution in this command. */
  substitutions: ParsedShell[];
  /** The bodies of this command's here-documents, in order (their `<<WORD` operators are not among the words). */
  heredocs: string[];
  /** This command's here-strings (`<<< text`), not among the words either. */
  herestrings: string[];
  /** Whether this command's standard output is piped (`|`) into the next command. */
  pipesInto: boolean;
  /**
   * Whether a chain operator (`;`, `&`, `&&`, `||`, `|`, newline) separates this command from the
   * one before it; false for the first command and for one that only a group or subshell
   * boundary (`(`, `)`) separates from it.
   */
  chained: boolean;
  /** The scripts this command hands to a shell (see above), parsed. */
  scripts: ParsedShell[];
  /** Scripts this command hands to a shell that lie deeper than MAX_SHELL_DEPTH and were not read. */
  unread: number;
  /**
   * The commands of the process substitutions among this command's arguments (`bash <(curl …)`),
   * parsed. Their commands are also read on their own, after this one (a group boundary apart,
   * not chained); this says whose argument they are (SEC-006).
   */
  processSubstitutions?: ParsedShell[];
}

export interface ParsedShell {
  commands: SimpleCommand[];
}

/**
 * One unquoted brace expansion in a word, `pre{a,b}post` (not `${…}`): the indices of its `{` and
 * `}`, or null. The word holds exactly one `{` and one `}` after it, the `{` not after a `$`, and a
 * `,` between them: what `/^([^{}]*?)(?<!\$)\{([^{}]*,[^{}]*)\}([^{}]*)$/` matched, read in linear
 * time. The expression backtracked over every `,` for every character between them when the word
 * went on with another brace: `{` + 60,000 commas + `}{` took 1.3 s a reading (6.1 s an intake).
 */
export function braceExpansion(word: string): { open: number; close: number } | null {
  const open = word.indexOf("{");
  if (open < 0 || word.indexOf("{", open + 1) >= 0 || word[open - 1] === "$") return null;
  const close = word.indexOf("}");
  if (close < open || word.indexOf("}", close + 1) >= 0) return null;
  const comma = word.indexOf(",", open);
  return comma >= 0 && comma < close ? { open, close } : null;
}
/** An unquoted `$IFS` or `${IFS}`, at the start of the text tested. */
const IFS = /^\$(?:\{IFS\}|IFS(?![A-Za-z0-9_]))/;

/**
 * A here-document operator at the position tested: `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`,
 * the delimiter word ending there (a longer word, `<<E-O-F` or `<<"E"OF`, is not read as one:
 * its body is then read as commands, never the reverse).
 */
const HEREDOC = /<<(?!<)(-?)[ \t]*(['"]?)([A-Za-z0-9_]+)\2(?=$|[\s;&|<>()])/y;
/** Stands in for a here-document operator once its body is set aside: `<<`, NUL, the body's index, NUL. */
const HEREDOC_MARK = /^<<\u0000(\d+)\u0000$/;

/**
 * Sets aside the bodies of here-documents, leaving a marker where each operator was. Only an
 * operator the shell would read is one: not inside quotes (`echo "<<X"`), nor in a comment
 * (`# <<X`), whose following lines are commands, not a body.
 */
export function extractHeredocs(text: string): { text: string; bodies: string[]; expanding: boolean[] } {
  const lines = text.split("\n");
  const out: string[] = [];
  const bodies: string[] = [];
  /** Whether each body is expanded by the shell (its delimiter unquoted: `$(…)` and backticks in it run). */
  const expanding: boolean[] = [];
  /**
   * The quotes and substitutions open at the point read (they may span lines): `'`, `"`, `$'`,
   * or `(`/`` ` `` for a command substitution or subshell, inside which a quote opens anew
   * (`"$(cat <<EOF`… is a here-document).
   */
  const open: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const ends: { tabs: boolean; word: string; index: number }[] = [];
    const line = lines[i];
    let rewritten = "";
    for (let k = 0; k < line.length; k++) {
      const c = line[k];
      const top = open[open.length - 1];
      if (top === "'") {
        if (c === "'") open.pop();
      } else if (top === "$'") {
        if (c === "\\") {
          rewritten += c + (line[k + 1] ?? "");
          k++;
          continue;
        }
        if (c === "'") open.pop();
      } else if (c === "\\") {
        rewritten += c + (line[k + 1] ?? "");
        k++;
        continue;
      } else if ((c === "$" && line[k + 1] === "(" && line[k + 2] === "(") || (c === "(" && line[k + 1] === "(" && top !== '"')) {
        // Arithmetic, `$((…))` or `((…))`: its `<<` is a shift, not a here-document.
        open.push("((");
        rewritten += line.slice(k, k + (c === "$" ? 3 : 2));
        k += c === "$" ? 2 : 1;
        continue;
      } else if (c === "$" && line[k + 1] === "{") {
        // A parameter expansion, `${x:-<<EOF }`: its text is one word, not operators.
        open.push("${");
        rewritten += "${";
        k++;
        continue;
      } else if (c === "}" && top === "${") {
        open.pop();
      } else if (c === ")" && top === "((" && line[k + 1] === ")") {
        open.pop();
        rewritten += "))";
        k++;
        continue;
      } else if (c === "$" && line[k + 1] === "(") {
        open.push("(");
        rewritten += "$(";
        k++;
        continue;
      } else if (c === "`") {
        if (top === "`") open.pop();
        else open.push("`");
      } else if (top === '"') {
        if (c === '"') open.pop();
      } else if (c === "$" && line[k + 1] === "'") {
        open.push("$'");
        rewritten += "$'";
        k++;
        continue;
      } else if (c === "'" || c === '"' || c === "(") open.push(c);
      else if (c === ")") {
        if (top === "(") open.pop();
      } else if (c === "#" && (k === 0 || /[\s;&|()<>]/.test(line[k - 1]))) {
        rewritten += line.slice(k);
        break;
      } else if (c === "<" && line[k + 1] === "<" && line[k - 1] !== "<" && top !== "((" && top !== "${") {
        HEREDOC.lastIndex = k;
        const m = HEREDOC.exec(line);
        if (m) {
          expanding[bodies.length + ends.length] = m[2] === "";
          ends.push({ tabs: m[1] === "-", word: m[3], index: bodies.length + ends.length });
          rewritten += ` <<\u0000${bodies.length + ends.length - 1}\u0000 `;
          k += m[0].length - 1;
          continue;
        }
      }
      rewritten += c;
    }
    out.push(rewritten);
    for (const end of ends) {
      const body: string[] = [];
      while (i + 1 < lines.length) {
        i++;
        const bodyLine = end.tabs ? lines[i].replace(/^\t+/, "") : lines[i];
        if (bodyLine === end.word) break;
        body.push(bodyLine);
      }
      bodies[end.index] = body.join("\n");
    }
  }
  return { text: out.join("\n"), bodies, expanding };
}

/** Removes the bodies of here-documents, keeping the lines that start them. */
export const stripHeredocs = (text: string): string => extractHeredocs(text).text.replace(/ <<\u0000\d+\u0000 /g, "");

/** Index of the `)` closing a `$(` whose content starts at `from`, or -1. */
function closingParen(s: string, from: number): number {
  let depth = 1;
  let quote: string | null = null;
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === "\\") i++;
    else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

const ANSI_C_ESCAPE: Readonly<Record<string, string>> = { a: "\x07", b: "\b", e: "\x1b", E: "\x1b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

/**
 * The text of an ANSI-C quoted string `$'…'` whose content starts at `from`, its escapes decoded
 * as bash does (`\xHH`, `\NNN` octal, `\uHHHH`, `\UHHHHHHHH`, `\cX`, `\n`, `\t`, `\\`, `\'`, …),
 * and the index of its closing quote (the end of the text when unclosed).
 */
export function ansiC(s: string, from: number, cString = false): { text: string; end: number } {
  let text = "";
  let i = from;
  for (; i < s.length && s[i] !== "'"; i++) {
    if (s[i] !== "\\" || i + 1 >= s.length) {
      text += s[i];
      continue;
    }
    const e = s[++i];
    let m: RegExpExecArray | null;
    const rest = s.slice(i + 1);
    if (e in ANSI_C_ESCAPE) text += ANSI_C_ESCAPE[e];
    else if (e === "x" && (m = /^[0-9A-Fa-f]{1,2}/.exec(rest))) {
      text += String.fromCharCode(parseInt(m[0], 16));
      i += m[0].length;
    } else if (e === "u" && (m = /^[0-9A-Fa-f]{1,4}/.exec(rest))) {
      text += String.fromCodePoint(parseInt(m[0], 16));
      i += m[0].length;
    } else if (e === "U" && (m = /^[0-9A-Fa-f]{1,8}/.exec(rest))) {
      const cp = parseInt(m[0], 16);
      text += cp <= 0x10ffff ? String.fromCodePoint(cp) : "";
      i += m[0].length;
    } else if (/[0-7]/.test(e)) {
      m = /^[0-7]{0,2}/.exec(rest)!;
      text += String.fromCharCode(parseInt(e + m[0], 8) & 0xff);
      i += m[0].length;
    } else if (e === "c" && i + 1 < s.length) text += String.fromCharCode(s[++i].toUpperCase().charCodeAt(0) & 0x1f);
    else if (e === "\\" || e === "'" || e === '"' || e === "?") text += e;
    else text += "\\" + e;
  }
  // A word is a C string to the shell: a NUL an escape makes (`\0`, `\x00`, `\u0000`, `\c@`) ends the quoted
  // string's text there, so `rm -rf /$'\0'` and `r$'\0'm` are `rm -rf /` (review rv-54: read with the NUL, allowed).
  const nul = cString ? text.indexOf("\0") : -1;
  return { text: nul < 0 ? text : text.slice(0, nul), end: i };
}

/**
 * How much reading one command line may take: characters read, summed over every nested read
 * (a substitution, a script, a process substitution is read again at its own depth), at most
 * SHELL_WORK_PER_CHAR per character of the line plus SHELL_WORK_BASE. Ordinary lines read each
 * character a few times; nested process substitutions (`<(<(<(…`) made the reading polynomial of
 * degree ~9 in the line's length (3 KB: no answer within 15 s). The words a brace expansion makes
 * count too: `pre{1,1,…}` makes one word of the prefix's length per alternative, so a 40 KB line
 * made 10,000 words of 20,000 characters (0.95 s; with a host of CJK letters, which the URL parser
 * reads in quadratic time, 18 KB held an intake 7.5 s). Past the bound the line is not
 * judged: ShellTooComplex, which a rule answers with a deny (fail closed).
 */
export const SHELL_WORK_PER_CHAR = 16;
export const SHELL_WORK_BASE = 65_536;

/** A command line whose reading would pass the work bound: judged as a deny by the rule that read it. */
export class ShellTooComplex extends Error {
  constructor(length: number, message = `a command line of ${length} characters whose reading passes ${SHELL_WORK_PER_CHAR} reads a character (nested substitutions): not judged, refused`) {
    super(message);
    this.name = "ShellTooComplex";
  }
}

/** Characters the current top-level reading may still read (Infinity when none is under way), and that line's length. */
let workLeft = Infinity;
let lineLength = 0;

/** Counts `n` characters read against the top-level reading's bound. */
function spend(n: number): void {
  workLeft -= n;
  if (workLeft < 0) throw new ShellTooComplex(lineLength);
}

/**
 * What is left of SHELL_WORK_BASE for the lines read inside withShellWork (null outside it: each
 * line gets its own). A line may read SHELL_WORK_PER_CHAR a character of its own, and what it
 * reads beyond that comes out of this one base: given per line, the base let every short line of
 * a Command read 65,536 characters, so 1,000 distinct 30-character arguments (`<(` × 14 and two
 * letters, 33 KB) each read ~55,000 and held an intake 6.2 s in SEC-004 alone.
 */
let baseLeft: number | null = null;

/**
 * Runs `judge` (one rule judging one Command) with one SHELL_WORK_BASE for every line it reads:
 * its reading is then at most SHELL_WORK_PER_CHAR a character of all its lines plus the base.
 * What `judge` reads after its first `await` is bounded per line, as outside.
 */
export function withShellWork<T>(judge: () => T): T {
  const outer = baseLeft;
  baseLeft = SHELL_WORK_BASE;
  try {
    return judge();
  } finally {
    baseLeft = outer;
  }
}

/** For each `${` of `word`, the index of the `}` that closes it (nested ones matched inside), else -1: one pass with one stack. */
export function closingBraces(word: string): Int32Array {
  const close = new Int32Array(word.length).fill(-1);
  const open: number[] = [];
  for (let i = 0; i < word.length; i++) {
    if (word[i] === "$" && word[i + 1] === "{") open.push(i++);
    else if (word[i] === "}" && open.length > 0) close[open.pop()!] = i;
  }
  return close;
}

/**
 * `word` with its parameter expansions taken as empty, as a shell expands an unset variable: `$name`,
 * `${…}` of any form, one nested in it included (`${z:-${y}}`: an expression without nesting left
 * `${z:-}` behind, review rv-54), a positional or special parameter (`$1`, `$@`, `$*`, `$#`, `$?`,
 * `$$`, `$!`, `$-`). An unclosed `${` is kept. Linear: the `}` closing each `${` is found with one stack.
 */
export function withoutParameterExpansions(word: string): string {
  if (!word.includes("$")) return word;
  const close = closingBraces(word);
  let out = "";
  for (let i = 0; i < word.length; i++) {
    const end = word[i] === "$" ? expansionEnd(word, i, close) : -1;
    if (end < 0) out += word[i];
    else i = end;
  }
  return out;
}

/**
 * Where the parameter expansion whose `$` is at `i` ends (the index of its last character): a
 * closed `${…}` (`close` from closingBraces), `$name`, or a positional or special parameter; -1
 * when no expansion starts there (a lone `$`, an unclosed `${`).
 */
export function expansionEnd(word: string, i: number, close: Int32Array): number {
  const next = word[i + 1] ?? "";
  if (next === "{") return close[i];
  if (/^[A-Za-z_]$/.test(next)) {
    let end = i + 1;
    while (end + 1 < word.length && /^[A-Za-z0-9_]$/.test(word[end + 1])) end++;
    return end;
  }
  return /^[0-9@*#?$!-]$/.test(next) ? i + 1 : -1;
}

/** Parses a script: its here-documents are set aside first, then its commands are read. */
export function parseShell(input: string, depth = 0): ParsedShell {
  // Reading is synchronous, so one counter serves the top-level call and every read nested in it.
  const top = workLeft === Infinity;
  const base = baseLeft ?? SHELL_WORK_BASE;
  if (top) {
    workLeft = SHELL_WORK_PER_CHAR * input.length + base;
    lineLength = input.length;
  }
  try {
    spend(input.length);
    const { text, bodies, expanding } = extractHeredocs(input);
    return parseCommands(text, bodies, depth, expanding);
  } finally {
    if (top) {
      // What the line read beyond its own allowance is gone from the shared base (all of it on a refusal).
      if (baseLeft !== null) baseLeft = Math.max(0, Math.min(base, workLeft));
      workLeft = Infinity;
    }
  }
}

/**
 * The command substitutions (`$(…)`, backticks) in the body of a here-document whose delimiter is
 * unquoted: the shell expands them, so they run (`cat <<EOF` … `$(rm -rf /)` … `EOF`).
 */
function bodySubstitutions(body: string, depth: number): ParsedShell[] {
  const out: ParsedShell[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "\\") i++;
    else if (c === "$" && body[i + 1] === "(" && body[i + 2] !== "(") {
      const end = closingParen(body, i + 2);
      const stop = end < 0 ? body.length : end;
      out.push(parseShell(body.slice(i + 2, stop), depth));
      i = stop;
    } else if (c === "`") {
      const end = body.indexOf("`", i + 1);
      const stop = end < 0 ? body.length : end;
      out.push(parseShell(body.slice(i + 1, stop), depth));
      i = stop;
    }
  }
  return out;
}

function parseCommands(s: string, bodies: readonly string[], depth: number, expanding: readonly boolean[] = []): ParsedShell {
  spend(s.length);
  const commands: SimpleCommand[] = [];
  let words: string[] = [];
  let subs: ParsedShell[] = [];
  let processSubs: ParsedShell[] = [];
  let heredocs: string[] = [];
  let herestrings: string[] = [];
  let herestringNext = false;
  let chained = false;
  let word: string | null = null;
  /**
   * The word being read as brace expansion sees it: each quoted or escaped character (and the
   * text of a substitution) stands as U+0001, so only unquoted braces and commas expand, while a
   * quoted part elsewhere in the word (`{rm,-rf,/}''`, `{rm,-rf,"/"}`) does not stop the expansion.
   */
  let view = "";
  /**
   * The context a character is read in, for the parameter expansions of a word: a number for the
   * unquoted text or one double-quoted string (a new one at every quote), -1 for text in which `$`
   * expands nothing or a name cannot go on (single quotes, an escape, `$'…'`, a substitution).
   */
  let context = 0;
  /** An expanding `$` just added (the word and view before it), and the name after it being read. */
  let dollar: { word: string; view: string; context: number; name: string | null } | null = null;
  const add = (text: string, quoted: boolean, at = -1) => {
    if (dollar !== null) {
      if (dollar.name === null && at === dollar.context && at >= 0 && /^[A-Za-z_]$/.test(text)) {
        dollar.name = text;
      } else if (dollar.name !== null && at === dollar.context && at >= 0 && /^[A-Za-z0-9_]$/.test(text)) {
        dollar.name += text;
      } else {
        // The name ends here. A name character read in another context goes on the word but not
        // the name (`"r"$x"m"`, `r"$x"m`, `r$x\m` are r, $x, m: rm with x unset), yet `$xm` would be
        // read as one name: it is written `${x}` (review rv-54: such words were allowed as rm).
        if (dollar.name !== null && at !== dollar.context && /^[A-Za-z0-9_]/.test(text)) {
          word = dollar.word + "${" + dollar.name + "}";
          view = dollar.view + "\u0001".repeat(dollar.name.length + 3);
        }
        dollar = null;
      }
    }
    if (text === "$" && at >= 0) dollar = { word: word ?? "", view, context: at, name: null };
    word = (word ?? "") + text;
    view += quoted ? "\u0001".repeat(text.length) : text;
  };
  let quote: string | null = null;
  const endWord = () => {
    if (word === null) return;
    const w: string = word;
    const seen = view;
    word = null;
    view = "";
    dollar = null;
    const brace = herestringNext || seen.length !== w.length ? null : braceExpansion(seen);
    if (brace) {
      const { open, close } = brace;
      const prefix = w.slice(0, open);
      const suffix = w.slice(close + 1);
      let from = open + 1;
      for (let k = open + 1; k <= close; k++) {
        if (k === close || seen[k] === ",") {
          // Each word the expansion makes is read (and every rule reads it again): it counts against
          // the bound, or `pre{1,…,1}` with a long prefix made words quadratic in the line.
          spend(prefix.length + (k - from) + suffix.length);
          words.push(prefix + w.slice(from, k) + suffix);
          from = k + 1;
        }
      }
      return;
    }
    const mark = HEREDOC_MARK.exec(w);
    if (herestringNext) {
      herestrings.push(w);
      herestringNext = false;
    } else if (mark) {
      const body = bodies[Number(mark[1])] ?? "";
      heredocs.push(body);
      if (expanding[Number(mark[1])] && depth < MAX_SHELL_DEPTH) subs.push(...bodySubstitutions(body, depth + 1));
    }
    else if (w === "<<<") herestringNext = true;
    else if (w.startsWith("<<<")) herestrings.push(w.slice(3));
    else words.push(w);
  };
  /** Ends the command being read; `operator` is whether a chain operator (rather than a group boundary) ends it. */
  const endCommand = (pipesInto: boolean, operator = true) => {
    endWord();
    herestringNext = false;
    if (words.length > 0 || heredocs.length > 0 || herestrings.length > 0) {
      commands.push({ words, substitutions: subs, heredocs, herestrings, pipesInto, chained: chained && commands.length > 0, scripts: [], unread: 0, processSubstitutions: processSubs });
      chained = false;
    }
    if (operator) chained = true;
    words = [];
    subs = [];
    processSubs = [];
    heredocs = [];
    herestrings = [];
  };
  const substitution = (inner: string, literal: string) => {
    if (depth < MAX_SHELL_DEPTH) subs.push(parseCommands(inner, bodies, depth + 1, expanding));
    add(literal, true);
  };
  /** Whether the character before this one was an unquoted `$IFS` (the shell's token goes on: `echo${IFS}#x` is no comment). */
  let afterIFS = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    const ifsBefore = afterIFS;
    afterIFS = false;
    if (quote === "'") {
      if (c === "'") {
        quote = null;
        context++;
      } else add(c, true);
      continue;
    }
    if (c === "\\" && i + 1 < s.length) {
      if (s[i + 1] !== "\n") {
        add(s[i + 1], true);
      }
      i++;
      continue;
    }
    if (c === "$" && s[i + 1] === "(" && s[i + 2] !== "(") {
      const end = closingParen(s, i + 2);
      const stop = end < 0 ? s.length : end;
      substitution(s.slice(i + 2, stop), s.slice(i, stop + 1));
      i = stop;
      continue;
    }
    if (c === "`") {
      const end = s.indexOf("`", i + 1);
      const stop = end < 0 ? s.length : end;
      substitution(s.slice(i + 1, stop), s.slice(i, stop + 1));
      i = stop;
      continue;
    }
    if (quote === '"') {
      if (c === '"') {
        quote = null;
        context++;
      } else add(c, true, context);
      continue;
    }
    if (c === "$" && s[i + 1] === '"') {
      // Locale quoting, `$"…"`: a double-quoted string (translated, when a catalog has it).
      word = word ?? "";
      continue;
    }
    if (c === "$" && s[i + 1] === "'") {
      // ANSI-C quoting, `$'…'`: its escapes decoded into the word.
      const { text, end } = ansiC(s, i + 2, true);
      add(text, true);
      i = end;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      context++;
      word = word ?? "";
    } else if (c === "$" && IFS.test(s.slice(i, i + 6))) {
      // An unquoted `$IFS` / `${IFS}` splits words as whitespace does.
      endWord();
      i += s[i + 1] === "{" ? 5 : 3;
      afterIFS = true;
    } else if (c === "(" && word !== null && word.endsWith("=")) {
      // An array assignment, `name=(a b c)`, is one word; the substitutions among its elements
      // run (`x=($(…))`), so they are this command's.
      const end = closingParen(s, i + 1);
      const stop = end < 0 ? s.length : end;
      if (depth < MAX_SHELL_DEPTH) for (const element of parseCommands(s.slice(i + 1, stop), bodies, depth + 1, expanding).commands) subs.push(...element.substitutions);
      add(s.slice(i, stop + 1), true);
      i = stop;
    } else if (c === "(" || c === ")") {
      // A subshell or group boundary (and the parentheses of a process substitution): the
      // commands on either side are read apart, but no chain operator joins them.
      endCommand(false, false);
    } else if ((c === "<" || c === ">") && s[i + 1] === "(") {
      endWord();
      if (depth < MAX_SHELL_DEPTH) {
        const end = closingParen(s, i + 2);
        processSubs.push(parseCommands(s.slice(i + 2, end < 0 ? s.length : end), bodies, depth + 1, expanding));
      }
    } else if (c === "<" && s.startsWith("<<\u0000", i)) {
      // A here-document marker left by extractHeredocs: one word.
      endWord();
      const end = s.indexOf("\u0000", i + 3);
      const stop = end < 0 ? s.length - 1 : end;
      word = s.slice(i, stop + 1);
      view = word;
      endWord();
      i = stop;
    } else if (c === "<" || c === ">" || (c === "&" && s[i + 1] === ">")) {
      // A redirection operator is a word of its own, with its file descriptor (`2>`), so the word
      // after it starts afresh: `cat<file`, `echo x>/dev/null`.
      const fd: string = word !== null && /^\d+$/.test(word) ? word : "";
      if (fd === "") endWord();
      let op = "";
      if (c === "&") op += s[i++];
      while (i < s.length && (s[i] === "<" || s[i] === ">")) op += s[i++];
      if (s[i] === "&" || s[i] === "|") op += s[i++];
      i--;
      word = fd + op;
      view = word;
      endWord();
    } else if (c === ";" || c === "\n" || c === "&" || c === "|") {
      endCommand(c === "|" && s[i + 1] !== "|");
      if ((c === "&" || c === "|") && s[i + 1] === c) i++;
    } else if (c === " " || c === "\t" || c === "\r") endWord();
    // A `#` after a carriage return is not a comment either: `\r` ends no token for the shell.
    else if (c === "#" && word === null && !ifsBefore && s[i - 1] !== "\r") {
      while (i + 1 < s.length && s[i + 1] !== "\n") i++;
    } else add(c, false, context);
  }
  endCommand(false);
  commands.forEach((command, i) => {
    for (const script of scriptsOf(command, commands[i - 1])) {
      if (depth < MAX_SHELL_DEPTH) command.scripts.push(parseShell(script, depth + 1));
      else command.unread++;
    }
  });
  return { commands };
}

/** Options of a shell that take the next word as their argument. */
const SHELL_OPTION_WITH_ARGUMENT = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

/** The text a command feeds on its standard output when it is only a literal: `cat` of here-documents, `echo`/`printf` of words. */
function literalOutput(command: SimpleCommand): string[] {
  const program = programOf(command);
  const name = program?.name.toLowerCase() ?? "";
  const args = program ? command.words.slice(program.at + 1) : [];
  if (name === "cat" && args.every((a) => a === "-")) return [...command.heredocs, ...command.herestrings];
  if (name === "echo") {
    // `echo -e`, and the `echo` of dash and POSIX sh, decode backslash escapes.
    const text = args.filter((a) => !/^-[neE]+$/.test(a)).join(" ");
    return [text, printfEscapes(text)];
  }
  if (name === "printf") return args.length > 0 ? [args.join(" "), printfOutput(args[0] === "--" ? args.slice(1) : args)] : [];
  return [];
}

/** `text` with the backslash escapes `printf` (and `echo -e`) decode, decoded: `\n`, `\t`, `\xHH`, `\NNN`, … */
const printfEscapes = (text: string): string => ansiC(text.replace(/'/g, "\\x27"), 0).text;

/**
 * A directive of a printf format: `%%`, or flags, a width, a precision and a conversion letter. The
 * flags and the width, written `[-+ #0]*\d*`, shared every `0` both ways, so a run of zeros that
 * ended in no letter was retried at every split (`printf %` and 60,000 `0` piped into `sh`: 6.7 s
 * an intake); `[-+ #0]*(?:[1-9]\d*)?` is the same language (a width's leading zeros are flags),
 * read one way.
 */
export const PRINTF_DIRECTIVE = /%(%|[-+ #0]*(?:[1-9]\d*)?(?:\.\d*)?([a-zA-Z]))/g;

/** What `printf FORMAT ARGS…` prints: the format's escapes decoded, each directive (`%s`, `%b`, `%d`, …) given the next argument, the format reused while arguments remain. */
function printfOutput(args: string[]): string {
  if (args.length === 0) return "";
  const format = printfEscapes(args[0]);
  const rest = args.slice(1);
  let out = "";
  let k = 0;
  for (let round = 0; round < 64; round++) {
    let used = false;
    out += format.replace(PRINTF_DIRECTIVE, (_m, spec: string, conversion: string | undefined) => {
      if (spec === "%") return "%";
      used = true;
      const arg = rest[k++] ?? "";
      return conversion === "b" ? printfEscapes(arg) : arg;
    });
    if (!used || k >= rest.length) break;
  }
  return out;
}

/** The script texts `command` hands to a shell to run; `previous` is the command before it (it may pipe into this one). */
function scriptsOf(command: SimpleCommand, previous: SimpleCommand | undefined): string[] {
  const program = programOf(command);
  // A shell drops the NUL bytes of a script it reads on its standard input (bash, dash: `printf 'r\0m -rf /' | sh`
  // runs rm -rf /), so the text printf or echo -e prints is read without them (review rv-56: read with them, allowed).
  const stdinScripts = () => [...command.heredocs, ...command.herestrings, ...(previous?.pipesInto ? literalOutput(previous) : [])].map((t) => t.replaceAll("\0", ""));
  // `sudo -s`, `sudo -i` and `doas -s` given no command run a shell on their standard input (review rv-50: `sudo -s <<< 'rm -rf /'`).
  if (!program) return runsStdinShell(command.words) ? stdinScripts() : [];
  const name = program.name.toLowerCase();
  const args = command.words.slice(program.at + 1);
  if (name === "find") return findActionScripts(args);
  if (name === "eval") {
    // `eval -- 'script'`: bash's eval takes (and ignores) an end-of-options `--`.
    const script = args[0] === "--" ? args.slice(1) : args;
    return script.length > 0 ? [script.join(" ")] : [];
  }
  if (!SCRIPT_SHELL.has(name)) return [];
  let k = 0;
  let inline = false;
  let stdin = false;
  for (; k < args.length; k++) {
    const a = args[k];
    if (a === "--") {
      k++;
      break;
    }
    if (SHELL_OPTION_WITH_ARGUMENT.has(a)) k++;
    else if (/^[-+][A-Za-z]+$/.test(a)) {
      if (a.includes("c")) inline = true;
      if (a.includes("s")) stdin = true;
    } else if (!a.startsWith("--")) break;
  }
  if (inline) return k < args.length ? [args[k]] : [];
  if (!stdin && k < args.length && args[k] !== "-" && args[k] !== "/dev/stdin") return [];
  return stdinScripts();
}

/** Whether words that name no program are `sudo` with `-s`/`-i` (`--shell`, `--login`) or `doas` with `-s`: a shell reading its standard input. */
function runsStdinShell(words: readonly string[]): boolean {
  const at = words.findIndex((w) => /^(?:sudo|doas)$/i.test(w.slice(w.lastIndexOf("/") + 1)));
  if (at < 0) return false;
  const doas = words[at].toLowerCase().endsWith("doas");
  // `--sh`, `--lo`: getopt_long's abbreviations of `--shell` and `--login` (review rv-54).
  return words.slice(at + 1).some((a) => (doas ? /^-[A-Za-z]*s/.test(a) : /^-[A-Za-z]*[si]/.test(a) || (a.length >= 4 && ("--shell".startsWith(a) || "--login".startsWith(a)))));
}

/** The actions of `find` that run a command: its words up to the next `;` or `+`. */
export const FIND_EXEC: ReadonlySet<string> = new Set(["-exec", "-execdir", "-ok", "-okdir"]);

/**
 * The scripts the actions of a `find` hand to a shell (`find / -exec sh -c 'rm -rf /' \;`): each
 * action's words, to its `;` or `+`, read as a command of their own. Each action's end is found
 * once, from the end, and its program with one memo for the line (programAt). An action that runs
 * `find` again has its own actions inside the same words, to the same end: they are read on in
 * this same pass, from that program word, rather than by reading a copy of the action's words as a
 * command (review rv-54: `find /` and `-exec find` × 5,500 copied the rest of the line at every
 * level, 2 s an intake at 4,000 levels, and recursed once a level: a stack overflow, answered 500).
 * Every other action's words are read once and skipped, so the reading is linear.
 */
function findActionScripts(args: string[]): string[] {
  const stop = findActionEnds(args);
  const memo = new Map<string, ProgramFound>();
  const scripts: string[] = [];
  for (let k = 0; k < args.length; k++) {
    if (!FIND_EXEC.has(args[k])) continue;
    const end = stop[k + 1];
    const program = programAt(args, k + 1, end, memo);
    if (program !== null && program.name.toLowerCase() === "find") {
      // The nested find's actions end where this one does: read on from its program word.
      k = program.at;
      continue;
    }
    const words = args.slice(k + 1, end);
    if (words.length > 0) scripts.push(...scriptsOf({ ...EMPTY_COMMAND, words }, undefined));
    k = end;
  }
  return scripts;
}

/**
 * For each index of a `find`'s words, where the action command starting there ends: the index of
 * the next `;` or `+` (or the words' length), found once, from the end, for every action at once.
 */
export function findActionEnds(words: readonly string[]): number[] {
  const stop = new Array<number>(words.length + 1);
  stop[words.length] = words.length;
  for (let k = words.length - 1; k >= 0; k--) stop[k] = words[k] === ";" || words[k] === "+" ? k : stop[k + 1];
  return stop;
}

/** A command of no words, here-documents or pipes: what a find action's words are read into. */
const EMPTY_COMMAND: Omit<SimpleCommand, "words"> = { substitutions: [], heredocs: [], herestrings: [], pipesInto: false, chained: false, scripts: [], unread: 0 };

/**
 * Programs that run the command that follows them, as a prefix (`sudo -u root rm …`): for each,
 * its options that take the next word as their argument, and how many operands come before the
 * command (`timeout 5 …`). `xargs` also hands the command the words on its standard input. The
 * BSD and macOS forms count too (review rv-50: `env -P /bin rm -rf /`, `doas -a style …`,
 * `sudo -c class …`, `xargs -J % rm -rf %` read the option's argument as the program), and GNU
 * env's `-a`/`--argv0` (coreutils 9.5).
 */
const WRAPPER: ReadonlyMap<string, { withArgument: ReadonlySet<string>; operands: number }> = new Map(
  (
    [
      ["sudo", ["-u", "-g", "-p", "-C", "-D", "-r", "-t", "-T", "-U", "-R", "-a", "-c", "-h", "--user", "--group", "--prompt", "--close-from", "--chdir", "--role", "--type", "--command-timeout", "--other-user", "--chroot", "--auth-type", "--login-class", "--host"], 0],
      ["doas", ["-u", "-C", "-a"], 0],
      ["timeout", ["-s", "-k", "--signal", "--kill-after"], 1],
      ["stdbuf", ["-i", "-o", "-e", "--input", "--output", "--error"], 0],
      ["ionice", ["-c", "-n", "-P", "-u", "--class", "--classdata", "--pgid", "--uid"], 0],
      ["nice", ["-n", "--adjustment"], 0],
      ["env", ["-u", "-C", "-S", "-P", "-L", "-U", "-a", "--unset", "--chdir", "--split-string", "--argv0"], 0],
      ["nohup", [], 0],
      ["setsid", [], 0],
      ["busybox", [], 0],
      // GNU xargs's `--eof[=str]` and `--replace[=R]` take an argument only after `=` (review rv-54: `xargs --replace rm -rf / <<< x` skipped rm).
      ["xargs", ["-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "-J", "-R", "-S", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--max-chars", "--process-slot-var"], 0],
      ["command", [], 0],
      ["builtin", [], 0],
      ["exec", ["-a"], 0],
      ["time", ["-f", "-o", "--format", "--output"], 0],
    ] as const
  ).map(([name, options, operands]) => [name, { withArgument: new Set<string>(options), operands }]),
);

/**
 * Whether a long option is an abbreviation of one that takes an argument, as getopt_long reads it
 * (sudo, env, timeout, xargs, … accept any unambiguous prefix: `sudo --us root`, `env --unse HOME`;
 * review rv-54: the argument was read as the program). A prefix of several is ambiguous and runs
 * nothing; `--login` (sudo) is an option of its own, though a prefix of `--login-class`.
 */
function takesArgumentAbbreviated(withArgument: ReadonlySet<string>, w: string): boolean {
  if (!w.startsWith("--") || w.length < 3 || w.includes("=") || w === "--login") return false;
  for (const option of withArgument) if (option.startsWith(w)) return true;
  return false;
}

/** Reserved words that may open a command without naming its program. */
const RESERVED_PREFIX: ReadonlySet<string> = new Set(["{", "}", "!", "if", "then", "else", "elif", "do", "while", "until", "coproc"]);

/** A redirection operator word as the parser emits it (`<`, `2>`, `>>`, `>&`, `&>`, `<<<`). */
export const isRedirection = (w: string): boolean => /^(?:\d*[<>][<>]*[&|]?|&>>?)$/.test(w);

export interface Invocation {
  /** The program's base name. */
  name: string;
  /** Its index among the command's words. */
  at: number;
  /** The program word and its arguments, redirections (operator and target) removed. */
  argv: string[];
  /** Whether the command is run by `xargs`, which appends the words on its standard input. */
  viaXargs: boolean;
}

/**
 * The program a command runs and its arguments: `VAR=value` words, reserved words (`{`, `!`,
 * `then`, `do`, …), redirections and wrapper programs (WRAPPER: `sudo -u root`, `timeout 5`,
 * `stdbuf -o0`, `busybox`, `xargs -0`, …) with their options skipped; a path reduced to its base name.
 */
export function invocationOf(command: SimpleCommand): Invocation | null {
  const words = command.words;
  const found = programAt(words, 0, words.length);
  if (!found) return null;
  const { at: i, name, viaXargs } = found;
  const w = words[i];
  const argv = [w];
  for (let k = i + 1; k < words.length; k++) {
    if (isRedirection(words[k])) k++;
    else argv.push(words[k]);
  }
  return { name, at: i, argv, viaXargs };
}

/** The program invocationOf finds, without its arguments. */
export type ProgramFound = { at: number; name: string; viaXargs: boolean } | null;

/**
 * The program word of `words[from…to)` as invocationOf finds it (its index in `words`, its base
 * name, whether xargs runs it), read without copying the words or gathering the arguments. With a
 * `memo` shared by calls on the same words, each state of the reading (a word's index, the wrapper
 * whose options are being skipped, its operands left, xargs seen) is read once for all of them:
 * `find . -ok sudo -ok sudo …` reads every `-ok`'s command to the end of the line otherwise.
 */
export function programAt(words: readonly string[], from: number, to: number, memo?: Map<string, ProgramFound>): ProgramFound {
  let viaXargs = false;
  let wrapper: { withArgument: ReadonlySet<string>; operands: number } | null = null;
  let wrapperName = "";
  let operands = 0;
  const states: string[] = [];
  const done = (found: ProgramFound): ProgramFound => {
    if (memo) for (const state of states) memo.set(state, found);
    return found;
  };
  for (let i = from; i < to; i++) {
    if (memo) {
      const state = `${i}|${to}|${wrapperName}|${operands}|${viaXargs ? 1 : 0}`;
      const known = memo.get(state);
      if (known !== undefined) return done(known);
      states.push(state);
    }
    const w = words[i];
    if (isRedirection(w)) {
      i++;
      continue;
    }
    if (wrapper) {
      if (w === "--") continue;
      if (w.startsWith("-") && w.length > 1) {
        if (wrapper.withArgument.has(w) || takesArgumentAbbreviated(wrapper.withArgument, w)) i++;
        else if (/^-[A-Za-z0-9]{2,}$/.test(w)) {
          // A cluster of short options (`-nu root`, `-uroot`): the first that takes an argument
          // takes the rest of the cluster, or the next word when it is the cluster's last letter.
          const k = [...w.slice(1)].findIndex((letter) => wrapper!.withArgument.has("-" + letter));
          if (k === w.length - 2) i++;
        }
        continue;
      }
      if (operands > 0) {
        operands--;
        continue;
      }
    }
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || RESERVED_PREFIX.has(w)) continue;
    const name = w.slice(w.lastIndexOf("/") + 1);
    // A wrapper's name compared without regard to case, as the programs rm and find are: macOS's
    // default filesystem finds /usr/bin/sudo for `SUDO` (review rv-54: `SUDO rm -rf /` was allowed).
    const folded = name.toLowerCase();
    const wrapping = WRAPPER.get(folded);
    if (wrapping) {
      wrapper = wrapping;
      wrapperName = folded;
      operands = wrapping.operands;
      viaXargs ||= folded === "xargs";
      continue;
    }
    return done({ at: i, name, viaXargs });
  }
  return done(null);
}

/** The word that names the program, as invocationOf finds it. */
export function programOf(command: SimpleCommand): { name: string; at: number } | null {
  const inv = invocationOf(command);
  return inv && { name: inv.name, at: inv.at };
}

/** The words a command reads on its standard input when they are known: its here-documents and here-strings, or the literal output of the command piped into it. */
export function stdinWords(command: SimpleCommand, previous: SimpleCommand | undefined): string[] {
  const texts = [...command.heredocs, ...command.herestrings, ...(previous?.pipesInto ? literalOutput(previous) : [])];
  return texts.flatMap((t) => t.split(/\s+/)).filter((w) => w !== "");
}

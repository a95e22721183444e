/**
 * A structural reading of a shell command line, enough for SEC-002 and SEC-006: heredoc bodies
 * set aside (they are data, not commands, unless a shell reads them), then split into simple
 * commands at `;`, `&`, `&&`, `||`, `|` and newlines, respecting quotes and backslash escapes.
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
  /** The scripts this command hands to a shell (see above), parsed. */
  scripts: ParsedShell[];
  /** Scripts this command hands to a shell that lie deeper than MAX_SHELL_DEPTH and were not read. */
  unread: number;
}

export interface ParsedShell {
  commands: SimpleCommand[];
}

const HEREDOC = /(?<!<)<<(?!<)(-?)\s*(['"]?)([A-Za-z0-9_]+)\2/g;
/** Stands in for a here-document operator once its body is set aside: `<<`, NUL, the body's index, NUL. */
const HEREDOC_MARK = /^<<\u0000(\d+)\u0000$/;

/** Sets aside the bodies of here-documents, leaving a marker where each operator was. */
export function extractHeredocs(text: string): { text: string; bodies: string[] } {
  const lines = text.split("\n");
  const out: string[] = [];
  const bodies: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const ends: { tabs: boolean; word: string; index: number }[] = [];
    out.push(
      lines[i].replace(HEREDOC, (_m, tabs: string, _q: string, word: string) => {
        ends.push({ tabs: tabs === "-", word, index: bodies.length + ends.length });
        return ` <<\u0000${bodies.length + ends.length - 1}\u0000 `;
      }),
    );
    for (const end of ends) {
      const body: string[] = [];
      while (i + 1 < lines.length) {
        i++;
        const line = end.tabs ? lines[i].replace(/^\t+/, "") : lines[i];
        if (line === end.word) break;
        body.push(line);
      }
      bodies[end.index] = body.join("\n");
    }
  }
  return { text: out.join("\n"), bodies };
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

/** Parses a script: its here-documents are set aside first, then its commands are read. */
export function parseShell(input: string, depth = 0): ParsedShell {
  const { text, bodies } = extractHeredocs(input);
  return parseCommands(text, bodies, depth);
}

function parseCommands(s: string, bodies: readonly string[], depth: number): ParsedShell {
  const commands: SimpleCommand[] = [];
  let words: string[] = [];
  let subs: ParsedShell[] = [];
  let heredocs: string[] = [];
  let herestrings: string[] = [];
  let herestringNext = false;
  let word: string | null = null;
  let quote: string | null = null;
  const endWord = () => {
    if (word === null) return;
    const w: string = word;
    word = null;
    const mark = HEREDOC_MARK.exec(w);
    if (herestringNext) {
      herestrings.push(w);
      herestringNext = false;
    } else if (mark) heredocs.push(bodies[Number(mark[1])] ?? "");
    else if (w === "<<<") herestringNext = true;
    else if (w.startsWith("<<<")) herestrings.push(w.slice(3));
    else words.push(w);
  };
  const endCommand = (pipesInto: boolean) => {
    endWord();
    herestringNext = false;
    if (words.length > 0 || heredocs.length > 0 || herestrings.length > 0) commands.push({ words, substitutions: subs, heredocs, herestrings, pipesInto, scripts: [], unread: 0 });
    words = [];
    subs = [];
    heredocs = [];
    herestrings = [];
  };
  const substitution = (inner: string, literal: string) => {
    if (depth < MAX_SHELL_DEPTH) subs.push(parseCommands(inner, bodies, depth + 1));
    word = (word ?? "") + literal;
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
      continue;
    }
    if (c === "\\" && i + 1 < s.length) {
      if (s[i + 1] !== "\n") word = (word ?? "") + s[i + 1];
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
      if (c === '"') quote = null;
      else word += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      word = word ?? "";
    } else if (c === ";" || c === "\n" || c === "&" || c === "|") {
      endCommand(c === "|" && s[i + 1] !== "|");
      if ((c === "&" || c === "|") && s[i + 1] === c) i++;
    } else if (c === " " || c === "\t" || c === "\r") endWord();
    else if (c === "#" && word === null) {
      while (i + 1 < s.length && s[i + 1] !== "\n") i++;
    } else word = (word ?? "") + c;
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
  if (name === "echo") return [args.filter((a) => !/^-[neE]+$/.test(a)).join(" ")];
  if (name === "printf") return args.length > 0 ? [args.join(" ")] : [];
  return [];
}

/** The script texts `command` hands to a shell to run; `previous` is the command before it (it may pipe into this one). */
function scriptsOf(command: SimpleCommand, previous: SimpleCommand | undefined): string[] {
  const program = programOf(command);
  if (!program) return [];
  const name = program.name.toLowerCase();
  const args = command.words.slice(program.at + 1);
  if (name === "eval") return args.length > 0 ? [args.join(" ")] : [];
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
  return [...command.heredocs, ...command.herestrings, ...(previous?.pipesInto ? literalOutput(previous) : [])];
}

/** The word that names the program: leading `sudo`, `env`, `exec`, `nohup`, `command` and `VAR=value` words skipped; a path reduced to its base name. */
export function programOf(command: SimpleCommand): { name: string; at: number } | null {
  const prefixes = new Set(["sudo", "env", "exec", "nohup", "command", "time", "nice"]);
  for (let i = 0; i < command.words.length; i++) {
    const w = command.words[i];
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || prefixes.has(w) || (w.startsWith("-") && i > 0 && prefixes.has(command.words[i - 1]))) continue;
    return { name: w.slice(w.lastIndexOf("/") + 1), at: i };
  }
  return null;
}

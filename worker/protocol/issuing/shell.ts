/**
 * A structural reading of a shell command line, enough for SEC-002 and SEC-006: heredoc bodies
 * removed (they are data, not commands), then split into simple commands at `;`, `&`, `&&`,
 * `||`, `|` and newlines, respecting quotes and backslash escapes. Command substitutions
 * (`$(…)`, backticks) are parsed recursively and reported with the command they sit in.
 */

export interface SimpleCommand {
  /** Words after quote removal; substitutions appear as their literal text. */
  words: string[];
  /** The commands inside each substitution in this command. */
  substitutions: ParsedShell[];
}

export interface ParsedShell {
  commands: SimpleCommand[];
}

const HEREDOC = /<<(-?)\s*(['"]?)([A-Za-z0-9_]+)\2/g;

/** Removes the bodies of here-documents, keeping the lines that start them. */
export function stripHeredocs(text: string): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    out.push(line);
    const ends: { tabs: boolean; word: string }[] = [];
    for (const m of line.replace(/<<</g, "").matchAll(HEREDOC)) ends.push({ tabs: m[1] === "-", word: m[3] });
    for (const end of ends) {
      while (i + 1 < lines.length) {
        i++;
        const body = end.tabs ? lines[i].replace(/^\t+/, "") : lines[i];
        if (body === end.word) break;
      }
    }
  }
  return out.join("\n");
}

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

export function parseShell(input: string, depth = 0): ParsedShell {
  const s = depth === 0 ? stripHeredocs(input) : input;
  const commands: SimpleCommand[] = [];
  let words: string[] = [];
  let subs: ParsedShell[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (words.length > 0) commands.push({ words, substitutions: subs });
    words = [];
    subs = [];
  };
  const substitution = (inner: string, literal: string) => {
    if (depth < 8) subs.push(parseShell(inner, depth + 1));
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
      endCommand();
      if ((c === "&" || c === "|") && s[i + 1] === c) i++;
    } else if (c === " " || c === "\t" || c === "\r") endWord();
    else if (c === "#" && word === null) {
      while (i + 1 < s.length && s[i + 1] !== "\n") i++;
    } else word = (word ?? "") + c;
  }
  endCommand();
  return { commands };
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

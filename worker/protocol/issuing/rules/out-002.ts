import { capCombiningRuns } from "../marks.js";
import { INSTRUCTION_PATTERN, PROMPT_INJECTION_THRESHOLD } from "../scopes.js";
import { allow, deny, outputText, regex, type OutputRule } from "./types.js";

/** Code points that render as nothing (zero-width and bidi marks, soft hyphen, word joiners, BOM, variation selectors, tags, …). */
const RENDERS_AS_NOTHING = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The readings of an output the patterns are tried on: as written, and as read (NFKC, characters
 * that render as nothing removed), so a zero-width space inside a word (`ig\u200bnore`), a soft
 * hyphen or fullwidth letters (`ｉｇｎｏｒｅ`) do not hide a phrase the model reads plainly; and both
 * again with HTML character references decoded (`&nbsp;`, `&#32;`, `&lt;`), as a page shows them.
 */
function instructionReadings(text: string): string[] {
  // A run of marks is cut to the stream-safe bound before NFKC, whose reordering is quadratic in it (marks.ts).
  const fold = (t: string) => capCombiningRuns(t).normalize("NFKC").replace(RENDERS_AS_NOTHING, "");
  const readings = [text, fold(text)];
  // Fetched pages are HTML: `ignore&nbsp;all&nbsp;previous&nbsp;instructions` and `&lt;|im_start|&gt;` are
  // what a page shows as the phrase, and a model reading the markup reads them so.
  if (text.includes("&")) {
    const decoded = decodeCharacterReferences(text);
    if (decoded !== text) readings.push(decoded, fold(decoded));
  }
  return [...new Set(readings)];
}

/** HTML's character references a phrase or role marker can be written in: numeric ones, and the named ones of whitespace and markup. */
const CHARACTER_REFERENCE = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(nbsp|ensp|emsp|thinsp|lt|gt|amp|quot|apos|vert|verbar|lsqb|rsqb|lbrack|rbrack|num|colon|Tab|NewLine));?/g;
const NAMED_REFERENCE: Record<string, string> = {
  nbsp: "\u00a0", ensp: "\u2002", emsp: "\u2003", thinsp: "\u2009", lt: "<", gt: ">", amp: "&", quot: '"', apos: "'",
  vert: "|", verbar: "|", lsqb: "[", rsqb: "]", lbrack: "[", rbrack: "]", num: "#", colon: ":", Tab: "\t", NewLine: "\n",
};

/** `text` with its character references decoded once (a reference to no Unicode scalar value is kept as written). */
export function decodeCharacterReferences(text: string): string {
  return text.replace(CHARACTER_REFERENCE, (ref, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) return NAMED_REFERENCE[name];
    const cp = dec !== undefined ? parseInt(dec, 10) : parseInt(hex!, 16);
    return cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? ref : String.fromCodePoint(cp);
  });
}

/**
 * chat-role-marker's line form as deployed, and the same language written so that a backtracking
 * engine runs it in linear time. As deployed, `^\s*` (multiline) let every line start of a run of
 * blank lines scan the whole run (256 KiB of newlines: tens of seconds), and `\s*:?\s*$` split a run of
 * spaces after `system` both ways (quadratic in the run). A match whose leading `\s*` crosses a line
 * terminator is also a match from the line start after the last one crossed, so the leading
 * whitespace need not cross one; `:?` between two `\s*` accepts what `(?::\s*)?` after one does.
 */
export const ROLE_MARKER_LINE = "^\\s*#{2,}\\s*system\\s*:?\\s*$";
export const ROLE_MARKER_LINE_LINEAR = "^[^\\S\\n\\r\\u2028\\u2029]*#{2,}\\s*system\\s*(?::\\s*)?$";

/** The source a deployed instruction pattern is compiled from: the pattern, its role-marker line in the linear form. */
export const compiledInstructionSource = (pattern: string): string => pattern.split(ROLE_MARKER_LINE).join(ROLE_MARKER_LINE_LINEAR);

/** The instruction patterns `text` matches in any of its readings, by name (each counted once). */
export function instructionPatternsIn(text: string, onlySystemPrompt = false): string[] {
  const readings = instructionReadings(text);
  return INSTRUCTION_PATTERN.filter((p) => (!onlySystemPrompt || p.addresses_system_prompt) && readings.some((t) => regex(compiledInstructionSource(p.pattern), "im").test(t))).map((p) => p.name);
}

export const OUT_002: OutputRule = {
  name: "OUT-002",
  trigger: `the output text matches ${PROMPT_INJECTION_THRESHOLD} or more distinct INSTRUCTION_PATTERN entries`,
  scope: "output of any tool",
  judge({ output }) {
    const found = instructionPatternsIn(outputText(output.content));
    return found.length >= PROMPT_INJECTION_THRESHOLD ? deny(`OUT-002: prompt-injection pattern (${found.join(", ")})`) : allow();
  },
};

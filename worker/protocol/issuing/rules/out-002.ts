import { INSTRUCTION_PATTERN, PROMPT_INJECTION_THRESHOLD } from "../scopes.js";
import { allow, deny, outputText, regex, type OutputRule } from "./types.js";

/** Code points that render as nothing (zero-width and bidi marks, soft hyphen, word joiners, BOM, variation selectors, tags, …). */
const RENDERS_AS_NOTHING = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The readings of an output the patterns are tried on: as written, and as read (NFKC, characters
 * that render as nothing removed), so a zero-width space inside a word (`ig\u200bnore`), a soft
 * hyphen or fullwidth letters (`ｉｇｎｏｒｅ`) do not hide a phrase the model reads plainly.
 */
function instructionReadings(text: string): string[] {
  const folded = text.normalize("NFKC").replace(RENDERS_AS_NOTHING, "");
  return folded === text ? [text] : [text, folded];
}

/** The instruction patterns `text` matches in any of its readings, by name (each counted once). */
export function instructionPatternsIn(text: string, onlySystemPrompt = false): string[] {
  const readings = instructionReadings(text);
  return INSTRUCTION_PATTERN.filter((p) => (!onlySystemPrompt || p.addresses_system_prompt) && readings.some((t) => regex(p.pattern, "im").test(t))).map((p) => p.name);
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

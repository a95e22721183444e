import { INSTRUCTION_PATTERN, PROMPT_INJECTION_THRESHOLD } from "../scopes.js";
import { allow, deny, outputText, regex, type OutputRule } from "./types.js";

/** The instruction patterns `text` matches, by name (each counted once). */
export function instructionPatternsIn(text: string, onlySystemPrompt = false): string[] {
  return INSTRUCTION_PATTERN.filter((p) => (!onlySystemPrompt || p.addresses_system_prompt) && regex(p.pattern, "im").test(text)).map((p) => p.name);
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

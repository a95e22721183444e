import { NETWORK_FETCH_TOOL } from "../scopes.js";
import { instructionPatternsIn } from "./out-002.js";
import { allow, deny, outputText, toolIn, type OutputRule } from "./types.js";

export const OUT_003: OutputRule = {
  name: "OUT-003",
  trigger: "the output text matches any INSTRUCTION_PATTERN entry that addresses the agent's system prompt",
  scope: "output of tools in NETWORK_FETCH_TOOL",
  judge({ tool, output }) {
    if (!toolIn(NETWORK_FETCH_TOOL, tool)) return allow("not a network-fetch tool");
    const found = instructionPatternsIn(outputText(output.content), true);
    return found.length > 0 ? deny(`OUT-003: fetched content addresses the system prompt (${found[0]})`) : allow();
  },
};

import { NETWORK_FACING_TOOL } from "../scopes.js";
import { secretIn } from "./sec-003.js";
import { allow, deny, outputText, toolIn, type OutputRule } from "./types.js";

export const OUT_001: OutputRule = {
  name: "OUT-001",
  trigger: "the output text matches a deployed secret pattern (SECRET_PATTERN, the same predicate as SEC-003)",
  scope: "output of tools in NETWORK_FACING_TOOL",
  judge({ tool, output }) {
    if (!toolIn(NETWORK_FACING_TOOL, tool)) return allow("not a network-facing tool");
    const found = secretIn(outputText(output.content));
    return found ? deny(`OUT-001: output of a network-facing tool carries a ${found}`) : allow();
  },
};

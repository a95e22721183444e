import { NETWORK_FACING_TOOL, SECRET_PATTERN } from "../scopes.js";
import { allow, argumentStrings, deny, regex, toolIn, type InputRule } from "./types.js";

/** The name of the first deployed secret pattern `text` matches, or null. */
export function secretIn(text: string): string | null {
  for (const { name, pattern } of SECRET_PATTERN) if (regex(pattern, "m").test(text)) return name;
  return null;
}

export const SEC_003: InputRule = {
  name: "SEC-003",
  trigger: "an argument matches a deployed secret pattern (SECRET_PATTERN)",
  scope: "string arguments of tools in NETWORK_FACING_TOOL",
  judge({ command }) {
    if (!toolIn(NETWORK_FACING_TOOL, command.tool as string)) return allow("not a network-facing tool");
    for (const s of argumentStrings(command.params)) {
      const found = secretIn(s);
      if (found) return deny(`SEC-003: a ${found} would leave for the network`);
    }
    return allow();
  },
};

import { allow, deny, type InputRule } from "./types.js";

/** The canonical request's required fields (CCS §3.1), in the order they are reported. */
export const REQUIRED_COMMAND_FIELDS = ["intake_version", "agent_id", "tool", "params", "timestamp", "trace_id"] as const;

/** The required fields `command` omits. Intake answers INTAKE_MISSING_FIELD with the same list. */
export function missingCanonicalFields(command: Record<string, unknown>): string[] {
  return REQUIRED_COMMAND_FIELDS.filter((f) => !Object.hasOwn(command, f) || command[f] === undefined);
}

export const SEC_007: InputRule = {
  name: "SEC-007",
  trigger: "the canonical request omits a required field (intake_version, agent_id, tool, params, timestamp, trace_id)",
  scope: "presence of each required field in the canonical request",
  judge({ command }) {
    const missing = missingCanonicalFields(command);
    return missing.length > 0 ? deny(`SEC-007: missing ${missing.join(", ")}`) : allow();
  },
};

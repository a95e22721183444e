import { DESTRUCTIVE_TOOL } from "../scopes.js";
import { allow, escalate, toolIn, type InputRule } from "./types.js";

export const SEC_005: InputRule = {
  name: "SEC-005",
  trigger: "the tool is in DESTRUCTIVE_TOOL and the intake carries no human_approval naming this request's request_hash",
  scope: "the tool name",
  judge({ command, requestHash, humanApproval }) {
    if (!toolIn(DESTRUCTIVE_TOOL, command.tool as string)) return allow("not a destructive tool");
    if (humanApproval === null) return escalate("SEC-005: destructive tool without a human approval");
    if (humanApproval.request_hash !== requestHash) return escalate("SEC-005: the human approval is for another request");
    return allow(`approved by ${humanApproval.approver}`);
  },
};

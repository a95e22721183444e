import { OUTCOME_STATUS } from "../scopes.js";
import { allow, deny, type OutputRule } from "./types.js";

export const OUT_007: OutputRule = {
  name: "OUT-007",
  trigger: "the output reports an outcome_status outside confirmed, dispatched, indeterminate, unknown",
  scope: "output metadata",
  judge({ output }) {
    const s = output.outcome_status;
    return s === undefined || OUTCOME_STATUS.includes(s) ? allow() : deny(`OUT-007: outcome_status ${JSON.stringify(s)} is outside the closed enum`);
  },
};

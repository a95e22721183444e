import { jcs } from "../../digest.js";
import { utf8Length } from "../../encoding.js";
import { DEFAULT_OUTPUT_MAX_SIZE } from "../scopes.js";
import { allow, deny, type OutputRule } from "./types.js";

/** Bytes of the output: a string's UTF-8, anything else its canonical JSON. */
export const outputBytes = (content: unknown): number => utf8Length(typeof content === "string" ? content : jcs(content));

export const OUT_004: OutputRule = {
  name: "OUT-004",
  trigger: `the output's byte length exceeds the declared max_size (${DEFAULT_OUTPUT_MAX_SIZE} when none is declared)`,
  scope: "output metadata",
  judge({ output }) {
    const max = output.declared?.max_size ?? DEFAULT_OUTPUT_MAX_SIZE;
    const size = outputBytes(output.content);
    return size > max ? deny(`OUT-004: output is ${size} bytes, declared max_size ${max}`) : allow();
  },
};

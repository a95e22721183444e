import { allow, deny, type OutputRule } from "./types.js";

/** A media type's essence: type/subtype, lowercased, parameters dropped. */
export const mediaEssence = (t: string): string => t.split(";")[0].trim().toLowerCase();

export const OUT_005: OutputRule = {
  name: "OUT-005",
  trigger: "a content_type is declared and the output's content_type is absent or has another essence (type/subtype)",
  scope: "output metadata",
  judge({ output }) {
    const declared = output.declared?.content_type;
    if (declared === undefined) return allow("no content_type declared");
    if (output.content_type === undefined) return deny(`OUT-005: output has no content_type, ${mediaEssence(declared)} declared`);
    return mediaEssence(output.content_type) === mediaEssence(declared) ? allow() : deny(`OUT-005: output is ${mediaEssence(output.content_type)}, ${mediaEssence(declared)} declared`);
  },
};

/**
 * The KV value schemas, as committed JSON Schema documents, and their validators.
 * @cfworker/json-schema is used because it validates without code generation (no `eval`,
 * which Workers forbid) and so runs unchanged in the Worker, the CLI and the tests.
 */
import { Validator, type Schema } from "@cfworker/json-schema";
import anchorKey from "./anchor-key.schema.json" with { type: "json" };
import anchor from "./anchor.schema.json" with { type: "json" };
import anchorPin from "./anchor-pin.schema.json" with { type: "json" };
import configRecord from "./config-record.schema.json" with { type: "json" };
import manifest from "./manifest.schema.json" with { type: "json" };
import manifestPin from "./manifest-pin.schema.json" with { type: "json" };
import pinnedManifest from "./pinned-manifest.schema.json" with { type: "json" };

export type SchemaCheck = { ok: true } | { ok: false; errors: string[] };

function validatorFor(schema: object): (value: unknown) => SchemaCheck {
  const validator = new Validator(schema as Schema, "2020-12", false);
  for (const shared of [anchorKey, manifest, pinnedManifest]) validator.addSchema(shared as Schema);
  return (value) => {
    const result = validator.validate(value);
    if (result.valid) return { ok: true };
    return { ok: false, errors: result.errors.filter((e) => e.keyword !== "allOf" && e.keyword !== "properties" && e.keyword !== "items").map((e) => `${e.instanceLocation}: ${e.error}`) };
  };
}

export const validateAnchorRecord = validatorFor(anchor);
export const validateAnchorPin = validatorFor(anchorPin);
export const validateManifest = validatorFor(manifest);
export const validateManifestPin = validatorFor(manifestPin);
export const validateConfigRecord = validatorFor(configRecord);

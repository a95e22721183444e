/**
 * Shared shape rules of the usage and cost records: one error type, closed objects, and the
 * bounded string forms every record uses. Every factory first snapshots its input through the
 * strict JSON boundary, so what is checked here is plain, frozen JSON data.
 */
import { BoundaryError, snapshotJson, type JsonObject, type JsonValue } from "../boundary.js";
import type { JsonPath } from "../strict-json.js";

/**
 * Why a record was refused. `invalid` covers every shape and semantic rule (a missing metric not
 * named, money on an unavailable estimate, …); `identity` is a provider record that contradicts
 * the receipt it is reconciled against; `boundary` a smuggling shape refused before any rule ran.
 */
export type EvidenceErrorKind = "invalid" | "identity" | "boundary";

export class EvidenceError extends Error {
  constructor(
    readonly kind: EvidenceErrorKind,
    readonly path: JsonPath,
    message: string,
  ) {
    super(path.length ? `${message} (at ${path.join(".")})` : message);
    this.name = "EvidenceError";
  }
}

export const invalid = (path: JsonPath, message: string): never => {
  throw new EvidenceError("invalid", path, message);
};

/** The boundary step of every factory: a BoundaryError becomes an EvidenceError of kind `boundary`. */
export function snapshot(input: unknown): JsonValue {
  try {
    return snapshotJson(input);
  } catch (err) {
    if (err instanceof BoundaryError) throw new EvidenceError("boundary", err.path, `${err.reason}: ${err.message}`);
    throw err;
  }
}

const isObject = (v: JsonValue | undefined): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

/** `value` as an object holding only `required` and `optional` members, all of `required` present. */
export function closed(value: JsonValue | undefined, path: JsonPath, required: readonly string[], optional: readonly string[] = []): JsonObject {
  if (!isObject(value)) return invalid(path, "must be a JSON object");
  for (const key of Object.keys(value)) if (!required.includes(key) && !optional.includes(key)) invalid([...path, key], `unknown field ${JSON.stringify(key)}`);
  for (const key of required) if (!Object.hasOwn(value, key)) invalid([...path, key], "required field is missing");
  return value;
}

/** Identifiers: invocation ids, price source ids, limit names, journal record references. */
export const IDENTIFIER = /^[A-Za-z0-9._:-]{1,128}$/;
/** Free-form but bounded labels (model names, versions, provider request ids): printable ASCII, no spaces at the ends. */
export const LABEL = /^[\x21-\x7e]([\x20-\x7e]{0,254}[\x21-\x7e])?$/;

export function identifier(value: JsonValue | undefined, path: JsonPath): string {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) return invalid(path, "must be 1-128 of [A-Za-z0-9._:-]");
  return value;
}

export function label(value: JsonValue | undefined, path: JsonPath): string {
  if (typeof value !== "string" || !LABEL.test(value)) return invalid(path, "must be 1-256 printable ASCII characters, with no space at either end");
  return value;
}

/**
 * The first instant refused: 10^11 Unix seconds is in the year 5138, while every time since March
 * 1973 written in milliseconds by mistake is at least 10^11.
 */
export const MAX_INSTANT = 1e11;

/** A point in time: Unix seconds, a finite number ≥ 0 and below MAX_INSTANT. */
export function instant(value: JsonValue | undefined, path: JsonPath): number {
  if (typeof value !== "number" || !(value >= 0)) return invalid(path, "must be Unix seconds, a number ≥ 0");
  if (value >= MAX_INSTANT) return invalid(path, "must be Unix seconds below 10^11: this looks like milliseconds");
  return value;
}

export function oneOf<T extends string>(value: JsonValue | undefined, allowed: readonly T[], path: JsonPath): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) return invalid(path, `must be one of ${allowed.join(", ")}`);
  return value as T;
}

/** ISO 4217 alphabetic code form: three upper-case letters. */
export const CURRENCY = /^[A-Z]{3}$/;

export function currency(value: JsonValue | undefined, path: JsonPath): string {
  if (typeof value !== "string" || !CURRENCY.test(value)) return invalid(path, "must be an ISO 4217 code, three upper-case letters");
  return value;
}

export const MAX_ASSUMPTIONS = 16;

/** Optional assumptions a valuation states: at most 16 bounded labels. */
export function assumptions(value: JsonValue | undefined, path: JsonPath): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > MAX_ASSUMPTIONS) return invalid(path, `must be an array of at most ${MAX_ASSUMPTIONS} strings`);
  return value.map((a, i) => label(a, [...path, i]));
}

/** A frozen deep copy of a record the factory has assembled from validated parts. */
export function freeze<T>(record: T): T {
  if (record !== null && typeof record === "object" && !Object.isFrozen(record)) {
    for (const v of Object.values(record)) freeze(v);
    Object.freeze(record);
  }
  return record;
}

/** Drops members whose value is undefined, so optional fields are absent rather than undefined. */
export function compact<T extends Record<string, unknown>>(record: T): T {
  for (const key of Object.keys(record)) if (record[key] === undefined) delete record[key];
  return record;
}

/**
 * The strict JSON boundary of portable evidence records. Whatever a factory is handed — text off
 * the wire or a value built in memory — crosses here once and comes out as a deep, frozen copy of
 * plain JSON data, or not at all. Text goes through the strict parser (duplicate keys, lone
 * surrogates, unsafe integers, non-finite numbers, depth); a value is snapshotted member by
 * member, refusing what JSON cannot say or what could change between being validated and being
 * read: accessors, sparse arrays, array subclasses, class instances, symbol or hidden keys,
 * prototype keys (`__proto__`, `constructor`, `prototype`), and, at any depth, fields that confer
 * authority (credentials, approvals, charges): portable facts never carry them. A member whose
 * value is `undefined` is left out, as JSON text would leave it; an `undefined` element is refused.
 */
import { DEFAULT_MAX_DEPTH, parseStrictJson, StrictJsonError, type JsonPath, type StrictJsonReason } from "./strict-json.js";

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

export type BoundaryReason =
  | StrictJsonReason
  | "accessor"
  | "sparse_array"
  | "array_subclass"
  | "class_instance"
  | "symbol_key"
  | "hidden_property"
  | "prototype_key"
  | "authority_field"
  | "not_json";

export class BoundaryError extends Error {
  constructor(
    readonly reason: BoundaryReason,
    readonly path: JsonPath,
    message: string,
  ) {
    super(message);
    this.name = "BoundaryError";
  }
}

/** Keys that would reach or reshape a prototype if copied naively. */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Field names, compared without case, `_` or `-`, that grant or prove authority: credentials and
 * signed locators, approvals and acceptance, and financial instruments. No portable evidence
 * record holds one, so one anywhere in the input is a smuggling attempt, not data.
 */
export const AUTHORITY_FIELDS: ReadonlySet<string> = new Set([
  "authorization", "apikey", "accesstoken", "refreshtoken", "bearertoken", "credential", "credentials",
  "secret", "clientsecret", "password", "cookie", "setcookie", "privatekey", "signedurl",
  "approval", "approved", "accepted", "acceptance", "authority", "grant", "permission", "permissions",
  "charge", "invoice", "billing", "payment", "settlement",
]);

const authorityName = (key: string): string => key.replace(/[_-]/g, "").toLowerCase();
export const isAuthorityField = (key: string): boolean => AUTHORITY_FIELDS.has(authorityName(key));

/** What a redacted credential becomes: the member stays, so a reader sees that one was there. */
export const REDACTED = "[redacted]";

/**
 * Names (compared as authority fields are: without case, `_` or `-`, so camelCase and snake_case
 * forms agree) whose value is a credential, whatever it looks like: these names exactly, any
 * name containing one of the parts, any name ending in one of the suffixes. A dotted name is
 * also judged by its last part, as OpenTelemetry names a header (`http.request.header.cookie`).
 */
const CREDENTIAL_NAMES = new Set([
  "token", "auth", "authorization", "proxyauthorization", "cookie", "cookies", "setcookie", "credential", "credentials", "cred", "creds",
  "signedurl", "privatekey", "sessionid", "pwd", "passcode", "passphrase", "secretkey", "bearer",
]);
const CREDENTIAL_PARTS = ["password", "passwd", "passphrase", "secret", "credential", "privatekey", "apikey"];
const CREDENTIAL_SUFFIXES = [
  // "token" covers every `*_token` form (api_token, github_token, client_token); "tokens" (a count) is not one.
  // "signingkey", "hmackey" and "subscriptionkey" are keys themselves; `*_key_id`, `kid` and `public_key` name none.
  // "authkey": X-Auth-Key, auth_key, DeepL-Auth-Key.
  "pwd", "creds", "auth", "accesskey", "token", "signature", "signingkey", "hmac", "hmackey", "jwt", "subscriptionkey", "authkey",
];
/** A signature or HMAC named with its digest: `X-Hub-Signature-256`, `X-Shopify-Hmac-Sha256`, `hmac_sha256`. */
const DIGEST_NAMED = /(?:signature|hmac)(?:sha(?:1|224|256|384|512)|256|512)$/;
const credentialNamed = (name: string): boolean =>
  CREDENTIAL_NAMES.has(name) || CREDENTIAL_PARTS.some((p) => name.includes(p)) || CREDENTIAL_SUFFIXES.some((s) => name.endsWith(s)) || DIGEST_NAMED.test(name);
/** The last part of a dotted name (`http.request.header.authorization` → `authorization`); an undotted name whole. */
const lastPart = (name: string): string => name.slice(name.lastIndexOf(".") + 1);
export const isCredentialName = (key: string): boolean => {
  const name = authorityName(key);
  return credentialNamed(name) || (name.includes(".") && credentialNamed(lastPart(name)));
};

/**
 * Values shaped like credentials wherever they sit: an authorization scheme and its token, the
 * common API key and token forms (sk-/pk-/rk-, AWS access key ids, GitHub classic and fine-grained,
 * Google, Slack), JWTs,
 * private key blocks, and URLs that carry a signature or a token in their query.
 */
const CREDENTIAL_VALUES: readonly RegExp[] = [
  /^\s*(bearer|basic|digest|token|negotiate)\s+\S/i,
  /\b(sk|pk|rk)[-_][A-Za-z0-9_-]{16,}/,
  /\b(AKIA|ASIA)[0-9A-Z]{16}\b/,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{22,}/,
  /\bAIza[0-9A-Za-z_-]{30,}/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----/,
  /[?&](x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|signature|sig|token|access_token|api_key|apikey|key)=/i,
];
export const isCredentialValue = (s: string): boolean => CREDENTIAL_VALUES.some((r) => r.test(s)) || jwtShaped(s);

/** A JWT's shape, `\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.` (what JWT_SHAPE says), read in linear time by jwtShaped. */
export const JWT_SHAPE = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\./;
const TOKEN_RUN = /[A-Za-z0-9_-]+/g;
const JWT_TAIL = /\.[A-Za-z0-9_-]{4,}\./y;
const WORD_CHAR = /[A-Za-z0-9_]/;

/** Whether `s` holds a JWT's shape (JWT_SHAPE), in linear time (jwtStartIn). */
export const jwtShaped = (s: string): boolean => jwtStartIn(s, 4, JWT_TAIL);

/**
 * Whether `text` holds `\beyJ[A-Za-z0-9_-]{firstMin,}` followed at once by what the sticky `rest`
 * matches: a JWT's first segment and what follows it (JWT_SHAPE here, SEC-003's JWT_PATTERN), in
 * linear time. As a regular expression, every `eyJ` after a word boundary scanned the rest of its
 * run of token characters (`eyJ-` × 60,000, 240 KB: 21 s). The first segment runs to the end of its
 * run (the class holds no `.`), so if a later `eyJ` of a run starts a match, the run's first one
 * after a word boundary does too, its segment only longer: that one start per run is tried, and
 * what follows a run is read once.
 */
export function jwtStartIn(text: string, firstMin: number, rest: RegExp): boolean {
  const runs = new RegExp(TOKEN_RUN.source, "g");
  for (let m = runs.exec(text); m !== null; m = runs.exec(text)) {
    const end = m.index + m[0].length;
    for (let at = m[0].indexOf("eyJ"); at >= 0; at = m[0].indexOf("eyJ", at + 1)) {
      const start = m.index + at;
      if (start > 0 && WORD_CHAR.test(text[start - 1])) continue;
      if (end - start - 3 < firstMin) break;
      rest.lastIndex = end;
      if (rest.test(text)) return true;
      break;
    }
  }
  return false;
}

/** The userinfo of a URL (`scheme://user:password@`), up to the last `@` before the path. */
const URL_USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]*@/gi;
/**
 * A `name=value`, `name: value`, `name => value` or `name := value` pair inside a string (quotes
 * around the name and the value may be escaped, as in a JSON document written into a JSON
 * string: `{\"password\":\"hunter2\"}`): the name and separator are found first
 * (only where a run of name characters starts), and only after a credential's name is its value
 * read (a quoted value, to its closing quote with backslash escapes inside it, or to its first quote
 * when it has no closing one, and an authorization scheme followed by its token, are taken whole). Each
 * character is looked at a bounded number of times, so a string is scanned in linear time
 * whatever it holds.
 */
const PAIR_NAME = /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]+)(\\?["']?[ \t]*(?:=>|:=|[=:])[ \t]*)/g;
const PAIR_VALUE = /(?:bearer|basic|digest|token|negotiate)[ \t]+[^\s&;,'"})\]]+|\\"[^"]*\\"|\\'[^']*\\'|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|"[^"]*"|'[^']*'|(?!\/\/)[^\s&;,'"})\]]+/iy;
/**
 * A cookie header's value is every cookie in it (`Cookie: lang=en; session=abc`), so unquoted it
 * runs to the end of the line, not to the first `;`.
 */
const COOKIE_VALUE = /\\"[^"]*\\"|\\'[^']*\\'|"[^"]*"|'[^']*'|[^\r\n]+/y;
const COOKIE_NAMES: ReadonlySet<string> = new Set(["cookie", "cookies", "setcookie"]);
/**
 * An authorization header's value is a scheme and its credentials, whatever the scheme
 * (`Authorization: Bot abc`, `Authorization: SSWS abc`, `Authorization: Digest username="bob",
 * response="…"`): PAIR_VALUE knows five schemes by name and took any other alone, keeping the
 * token after it. Here any scheme is taken with its token, or with its list of parameters.
 */
const AUTH_PARAM = String.raw`[A-Za-z0-9_-]+[ \t]*=[ \t]*(?:"[^"]*"|[^\s,]*)`;
const AUTHORIZATION_VALUE = new RegExp(
  String.raw`[A-Za-z][A-Za-z0-9!#$%*+.^_|~-]*[ \t]+(?:${AUTH_PARAM}(?:[ \t]*,[ \t]*${AUTH_PARAM})*|[^\s&;,'"})\]]+)|` + PAIR_VALUE.source,
  "iy",
);
const AUTHORIZATION_NAMES: ReadonlySet<string> = new Set(["authorization", "proxyauthorization"]);
/** The quote a value was written in: `"`, `'`, or one escaped (`\"`, a JSON document inside a JSON string). */
const VALUE_QUOTE = /^\\?["']/;

/**
 * A string with the credentials inside it replaced, the rest kept: URL userinfo becomes
 * `[redacted]@`, the value of a credential-named pair becomes `[redacted]` (quotes kept).
 */
export function redactCredentialParts(s: string): string {
  const text = s.replace(URL_USERINFO, (_m, scheme: string) => `${scheme}${REDACTED}@`);
  let out = "";
  let from = 0;
  const names = new RegExp(PAIR_NAME.source, PAIR_NAME.flags);
  const pairValues = new RegExp(PAIR_VALUE.source, PAIR_VALUE.flags);
  const cookieValues = new RegExp(COOKIE_VALUE.source, COOKIE_VALUE.flags);
  const authorizationValues = new RegExp(AUTHORIZATION_VALUE.source, AUTHORIZATION_VALUE.flags);
  for (let m = names.exec(text); m; m = names.exec(text)) {
    if (!isCredentialName(m[1])) continue;
    const name = lastPart(authorityName(m[1]));
    const values = COOKIE_NAMES.has(name) ? cookieValues : AUTHORIZATION_NAMES.has(name) ? authorizationValues : pairValues;
    values.lastIndex = names.lastIndex;
    const value = values.exec(text);
    if (!value) continue;
    const quote = VALUE_QUOTE.exec(value[0])?.[0] ?? "";
    out += text.slice(from, names.lastIndex) + quote + REDACTED + quote;
    from = names.lastIndex = values.lastIndex;
  }
  return out + text.slice(from);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export interface BoundaryOptions {
  maxDepth?: number;
  /**
   * `refuse` (the default): a member named as an authority field (AUTHORITY_FIELDS: `password`,
   * `secret`, `apikey`, `accesstoken`, …) is a smuggling attempt and the whole value is refused;
   * nothing else is looked for: a credential under another name (`github_token`, `auth`) or inside
   * a string is copied as it is. `redact`: for provider extensions, which may legitimately mention that a request
   * was authorised: the value of a credential-named member, and any string shaped like a
   * credential, is replaced by REDACTED before it is copied (an accessor is never invoked); in
   * other strings, URL userinfo and the values of credential-named `name=value` pairs are
   * replaced, the rest kept; the other authority fields are still refused.
   */
  credentials?: "refuse" | "redact";
}

/** Parses `text` strictly, then snapshots the result (which refuses the prototype and authority keys the parser admits). */
export function fromJsonText(text: string, options: BoundaryOptions = {}): JsonValue {
  let parsed: unknown;
  try {
    parsed = parseStrictJson(text, options.maxDepth ?? DEFAULT_MAX_DEPTH);
  } catch (err) {
    if (err instanceof StrictJsonError) throw new BoundaryError(err.reason, err.path, err.message);
    throw err;
  }
  return snapshotJson(parsed, options);
}

/** A deep frozen copy of `value` as plain JSON data, or a BoundaryError naming the first shape refused and where. */
export function snapshotJson(value: unknown, options: BoundaryOptions = {}): JsonValue {
  return copy(value, [], 0, options.maxDepth ?? DEFAULT_MAX_DEPTH, options.credentials === "redact");
}

function refuse(reason: BoundaryReason, path: JsonPath, message: string): never {
  throw new BoundaryError(reason, path, message);
}

function checkString(s: string, path: JsonPath): string {
  if (LONE_SURROGATE.test(s)) refuse("lone_surrogate", path, "lone surrogate in string");
  return s;
}

function copy(value: unknown, path: JsonPath, depth: number, maxDepth: number, redact: boolean): JsonValue {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "string") {
    checkString(value, path);
    return redact ? (isCredentialValue(value) ? REDACTED : redactCredentialParts(value)) : value;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) refuse("non_finite", path, "number is not finite");
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) refuse("unsafe_integer", path, "integer outside the safe range ±(2^53−1)");
    return Object.is(value, -0) ? 0 : value;
  }
  if (typeof value !== "object") return refuse("not_json", path, `a ${typeof value} is not JSON`);
  if (depth >= maxDepth) refuse("too_deep", path, `nesting deeper than ${maxDepth}`);
  const proto = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (proto !== Array.prototype) refuse("array_subclass", path, "an array subclass is not a JSON array");
    return copyArray(value, path, depth, maxDepth, redact);
  }
  if (proto !== Object.prototype && proto !== null) refuse("class_instance", path, "a class instance is not a JSON object");
  return copyObject(value as object, path, depth, maxDepth, redact);
}

function copyArray(value: unknown[], path: JsonPath, depth: number, maxDepth: number, redact: boolean): JsonValue {
  const keys = Reflect.ownKeys(value);
  // An array's own keys are its indices then "length"; anything else is a hole or a hidden member.
  if (keys.length !== value.length + 1) refuse(keys.length < value.length + 1 ? "sparse_array" : "hidden_property", path, "array is sparse or carries extra members");
  const out: JsonValue[] = [];
  for (let i = 0; i < value.length; i++) {
    const d = Object.getOwnPropertyDescriptor(value, i);
    if (!d) refuse("sparse_array", [...path, i], "sparse array");
    if (!("value" in d)) refuse("accessor", [...path, i], "array element is an accessor");
    out.push(copy(d.value, [...path, i], depth + 1, maxDepth, redact));
  }
  return Object.freeze(out);
}

/**
 * A member name as redact mode stores it: a name is a string too, so one shaped like a credential
 * (`"Bearer abc…": 1`, `"ghp_…": {…}`) becomes REDACTED, and the credential inside one
 * (`"password=hunter2"`, `"https://u:p@host/"`) is replaced as in any other string.
 */
const redactedName = (key: string): string => (isCredentialValue(key) ? REDACTED : redactCredentialParts(key));

function copyObject(value: object, path: JsonPath, depth: number, maxDepth: number, redact: boolean): JsonValue {
  const out: Record<string, JsonValue> = {};
  const put = (name: string, v: JsonValue, at: JsonPath) => {
    // Two names that redact to one would otherwise overwrite each other: refused, nothing is dropped silently.
    if (Object.hasOwn(out, name)) refuse("duplicate_key", at, `two members are stored under ${JSON.stringify(name)} once their credentials are redacted`);
    out[name] = v;
  };
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === "symbol") refuse("symbol_key", path, "symbol-keyed member");
    const at = [...path, key];
    checkString(key, at);
    if (PROTOTYPE_KEYS.has(key)) refuse("prototype_key", at, `prototype key ${JSON.stringify(key)}`);
    const name = redact ? redactedName(key) : key;
    const d = Object.getOwnPropertyDescriptor(value, key)!;
    if (redact && isCredentialName(key)) {
      // No credential is a boolean or null: `use_hmac: true`, `verify_jwt: false` are evidence, kept.
      const flag = "value" in d && d.enumerable && (d.value === null || typeof d.value === "boolean");
      put(name, flag ? (d.value as boolean | null) : REDACTED, at);
      continue;
    }
    if (isAuthorityField(key)) refuse("authority_field", at, `authority field ${JSON.stringify(key)} is never part of portable evidence`);
    if (!("value" in d)) refuse("accessor", at, "member is an accessor");
    if (!d.enumerable) refuse("hidden_property", at, "non-enumerable member");
    // An undefined member is an absent one, as in JSON text; an undefined array element is refused below.
    if (d.value !== undefined) put(name, copy(d.value, at, depth + 1, maxDepth, redact), at);
  }
  return Object.freeze(out);
}

/**
 * The HTTP edge of every route: one error type, one error shape, strict bodies with a size cap.
 * No response ever carries a stack trace or an internal path.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app.js";
import type { z } from "zod";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { CallErrorCode } from "./protocol/codes.js";
import { sha256 } from "./protocol/digest.js";
import { DEFAULT_MAX_DEPTH, isJsonObject, parseStrictJsonBytes, StrictJsonError } from "./protocol/strict-json.js";
import { rejection, VerifierUnavailable, type Mode } from "./protocol/verify.js";
import { ConfigurationError } from "./config.js";
import { JournalInputError } from "./protocol/journal/core.js";
import { observeDecision } from "./observability.js";
import { failure } from "./protocol/codes.js";

/** The code of a strict-parse violation inside the thing being verified, rather than the call around it. */
export type SubjectMalformed = "MALFORMED_RECEIPT" | "ENVELOPE_MALFORMED";
export interface Subject {
  field: string;
  code: SubjectMalformed;
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: CallErrorCode | SubjectMalformed,
    readonly detail: string,
    /** For a 401: the `WWW-Authenticate` challenge. */
    readonly challenge?: string,
  ) {
    super(detail);
  }
}

/** Verification routes answer errors in the decision's own shape; the others with `error` alone. */
export const DECISION_ROUTES = /^\/v1\/(receipts|envelopes)\/verify$/;

/**
 * The path a `request_failed` / `intake_failed` line names: the request's, with a relying party's
 * name (`DELETE /v1/admin/relying-parties/{name}`) left out: no log line carries one.
 */
export function loggedPath(c: Context): string {
  return new URL(c.req.url).pathname.replace(/^(\/v1\/admin\/relying-parties\/)[^/]+/, "$1{name}");
}

/**
 * One error shape for every 4xx/5xx: `{error: {code, detail}}`, plus the decision fields (a
 * rejection) on the decision routes. Bad input is a 4xx ApiError; a dependency that failed or
 * timed out is 503; a broken configuration is 500 SERVICE_MISCONFIGURED; input the journal
 * refuses is a 400 with its code; any other exception is
 * 500 INTERNAL_ERROR. Whatever is not an ApiError is logged once, here.
 */
export function errorResponse(c: Context, err: unknown): Response {
  let e: ApiError;
  if (err instanceof ApiError) e = err;
  else if (err instanceof VerifierUnavailable) e = new ApiError(503, "VERIFIER_UNAVAILABLE", `${err.dependency} did not answer; failing closed`);
  else if (err instanceof ConfigurationError) e = new ApiError(500, "SERVICE_MISCONFIGURED", err.message);
  else if (err instanceof JournalInputError) e = new ApiError(400, err.code, err.message);
  else e = new ApiError(500, "INTERNAL_ERROR", "internal error; nothing was decided");
  if (!(err instanceof ApiError) && !(err instanceof JournalInputError)) {
    // A failed dependency's own error is its cause: logged beside it, so an outage and a fault inside the object can be told apart.
    const cause = err instanceof VerifierUnavailable && err.cause !== undefined ? { cause: String(err.cause) } : {};
    console.error(JSON.stringify({ event: "request_failed", request_id: c.get("requestId"), path: loggedPath(c), error: String(err), ...cause }));
  }
  if (e.challenge) c.header("WWW-Authenticate", e.challenge);
  const detail = clipText(e.detail, MAX_DETAIL_CHARS);
  const error = { code: e.code, detail };
  // The path as routed (percent-decoded), so `/v1/receipts/%76erify` is the decision route it reached.
  if (!DECISION_ROUTES.test(c.req.path)) return c.json({ error }, e.status);
  const mode: Mode = c.get("mode") ?? "enforce";
  // The services' clock (as every decision's checked_at) when the call got that far.
  const services = c.get("services") as { now(): number } | undefined;
  const body = rejection([], mode, services ? services.now() : Date.now() / 1000);
  const subjectMalformed = e.code === "MALFORMED_RECEIPT" || e.code === "ENVELOPE_MALFORMED";
  const failures = [{ code: e.code, severity: "CRITICAL", step: subjectMalformed ? 0 : null, detail }];
  // A subject too malformed to parse is still a decision on it: logged and counted like one the schema refused.
  if (subjectMalformed && services) observeDecision(c as Context<AppEnv>, { ...body, failures: [failure(e.code as SubjectMalformed, detail)] }, e.status);
  return c.json({ ...body, failures, error }, e.status);
}

/**
 * The mode of a decision call, as far as it can be told before the call is validated, so that
 * an early refusal is shaped for it (`decision: "audit"` in audit mode). Best effort: a body the
 * strict parser refused is read natively for its `mode` alone; either way the answer refuses.
 */
function noteDecisionMode(c: Context, parsed: unknown, bytes?: Uint8Array): void {
  let value = parsed;
  if (bytes) {
    try {
      value = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      return;
    }
  }
  if (isJsonObject(value) && (value as { mode?: unknown }).mode === "audit") c.set("mode", "audit");
}

/**
 * Reads at most `maxBytes` of body and parses it strictly, nested at most `maxDepth` deep; a
 * violation inside `subject.field` carries `subject.code`.
 */
export async function readStrictJson(c: Context, maxBytes: number, subject?: Subject, maxDepth = DEFAULT_MAX_DEPTH): Promise<unknown> {
  return parseBody(c, await readBodyBytes(c, maxBytes), subject, maxDepth);
}

/**
 * For a route whose every member is optional: no body at all (zero bytes) is read as `{}`; any
 * other body is parsed as readStrictJson parses it (so whitespace alone is still malformed).
 */
export async function readOptionalStrictJson(c: Context, maxBytes: number): Promise<unknown> {
  const bytes = await readBodyBytes(c, maxBytes);
  return bytes.byteLength === 0 ? {} : parseBody(c, bytes);
}

// A plain promise chain rather than a second async frame: every verification's body comes through here.
function readBodyBytes(c: Context, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length") ?? NaN);
  if (declared > maxBytes) return Promise.reject(new ApiError(413, "REQUEST_TOO_LARGE", `body exceeds ${maxBytes} bytes`));
  // A body read before (twice, a fault of ours) is not the caller's: only a read that starts here and fails is.
  const usedBefore = c.req.raw.bodyUsed;
  return readBodyStream(c, maxBytes, declared).catch((err: unknown) => {
    if (err instanceof ApiError || usedBefore) throw err;
    // The body's stream failed: the caller's connection ended before its body did (a Content-Length
    // longer than what was sent, a client gone mid-upload). A fault of the call, not of this service:
    // a 400, and no request_failed line (which names failures that are not the caller's).
    throw new ApiError(400, "MALFORMED_REQUEST", "the body could not be read in full: the connection ended before it did");
  });
}

async function readBodyStream(c: Context, maxBytes: number, declared: number): Promise<Uint8Array> {
  // The raw body, not Hono's cached copy: a body is read once, here.
  if (Number.isInteger(declared)) return new Uint8Array(await c.req.raw.arrayBuffer());
  // No declared length: read the stream, refusing as soon as it passes the cap (what follows is read out, bounded).
  const reader = c.req.raw.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await discardRest(reader, DISCARD_LIMIT);
        throw new ApiError(413, "REQUEST_TOO_LARGE", `body exceeds ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) (bytes.set(chunk, at), (at += chunk.byteLength));
  return bytes;
}

/**
 * How much of a refused streamed body is read and dropped before the stream is cancelled. A
 * chunked body answered before it was read to its end, or cancelled, left the local runtime's
 * connection broken for the next request (`wrangler dev` answered it 503 "worker restarted
 * mid-request", or held a GET); read out, it does not. So the bound is above the request body
 * size Cloudflare lets through to a Worker on most plans (100 MB on Free and Pro): in practice a
 * refused body is read out whole. Reading costs wall time and a few milliseconds of CPU at most;
 * past the bound the stream is cancelled, so a body is never read beyond its cap and this.
 */
export const DISCARD_LIMIT = 128 * 1024 * 1024;

async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): Promise<void> {
  let read = 0;
  while (read <= limit) {
    const { done, value } = await reader.read();
    if (done) return;
    read += value.byteLength;
  }
  await reader.cancel();
}

/** The strict parse of a body; on the decision routes (a `subject` is named) the call's mode is noted first. */
function parseBody(c: Context, bytes: Uint8Array, subject?: Subject, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  try {
    const value = parseStrictJsonBytes(bytes, maxDepth);
    if (subject) noteDecisionMode(c, value);
    return value;
  } catch (err) {
    if (!(err instanceof StrictJsonError)) throw err;
    if (subject) noteDecisionMode(c, undefined, bytes);
    const inSubject = subject !== undefined && err.path[0] === subject.field;
    const where = err.path.length ? ` (at ${err.path.join(".")})` : "";
    throw new ApiError(400, inSubject ? subject.code : "MALFORMED_REQUEST", `${err.reason}: ${err.message}${where}`);
  }
}

/**
 * Declares a route's JSON body type for Hono's typed client (`hc`), reading nothing: the handler
 * itself reads the body strictly and validates it with `validateBody` against the same schema.
 */
export function jsonBody<T extends z.ZodType>(_schema: T): MiddlewareHandler<AppEnv, string, { in: { json: z.input<T> }; out: { json: z.output<T> } }> {
  return async (_c, next) => {
    await next();
  };
}

/**
 * Validates a strictly parsed body against its contract schema (the one `/openapi.json` is built
 * from); the first problems become a 400 MALFORMED_REQUEST that names where they are.
 */
export function validateBody<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.slice(0, 3).map((i) => clipProblem(i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message));
  throw new ApiError(400, "MALFORMED_REQUEST", problems.join("; "));
}

/**
 * Characters of one schema problem an answer restates. A problem can name every unknown key of
 * an object (`Unrecognized keys: "k0", "k1", …`), so 150,000 of them in a 1.7 MB body were
 * answered with a 1.8 MB detail; the rest is counted, not restated.
 */
export const MAX_PROBLEM_CHARS = 300;
const clipProblem = (text: string): string => clipText(text, MAX_PROBLEM_CHARS);

/**
 * Characters of an error's detail an answer restates, whatever the detail quotes: a duplicate or
 * unknown key of 1 MB was answered whole (a 1 MB detail); past this the rest is counted.
 */
export const MAX_DETAIL_CHARS = 1024;
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never cut a surrogate pair in two: the answer is JSON text, and a lone half would be escaped as one.
  const end = text.charCodeAt(max - 1) >= 0xd800 && text.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}… (${text.length - end} more characters)`;
}

/** `failures` with each detail cut as an error's is (clipText): a detail can quote the subject (an unknown field's name). */
export function clipFailureDetails<F extends { detail: string }>(failures: F[]): F[] {
  return failures.some((f) => f.detail.length > MAX_DETAIL_CHARS) ? failures.map((f) => ({ ...f, detail: clipText(f.detail, MAX_DETAIL_CHARS) })) : failures;
}

export function requireObject(value: unknown, what: string): Record<string, unknown> {
  if (!isJsonObject(value)) throw new ApiError(400, "MALFORMED_REQUEST", `${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * Whether the request's path, as sent, is valid percent-encoded UTF-8. The router decodes a path
 * parameter once and leaves what does not decode as it was, so a route that names something by
 * its percent-encoded form reads `c.req.param` as it is and asks this for the 400.
 */
export function percentDecodes(c: Context): boolean {
  return decodes(new URL(c.req.url).pathname);
}

/** Whether `text` is valid percent-encoded UTF-8. */
function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The request's query as sent: whether it is valid percent-encoded UTF-8, and its parameters as
 * URLSearchParams reads them. The router leaves a parameter that does not decode as it was sent, so
 * `?agent_id=%ff` would be read as the literal text `%ff` (`%25ff` is how that text is sent).
 */
function queryOf(c: Context): { decodes: boolean; params: URLSearchParams } {
  const url = new URL(c.req.url);
  return { decodes: decodes(url.search.replace(/\+/g, " ")), params: url.searchParams };
}

/**
 * The query of a route that takes named parameters once each: a query string that does not decode,
 * a parameter outside `allowed`, or one given twice (the router answers the first of a repeated
 * parameter, so `?limit=2&limit=300` would be read as 2, silently) is 400 MALFORMED_REQUEST.
 */
export function strictQuery(c: Context, allowed: ReadonlySet<string>): Record<string, string> {
  const bad = (detail: string): never => {
    throw new ApiError(400, "MALFORMED_REQUEST", detail);
  };
  const query = queryOf(c);
  if (!query.decodes) bad("the query string is not valid percent-encoded UTF-8");
  // The router drops a parameter with no name (`?=5`); it is no parameter this route takes either.
  if (query.params.has("")) bad("a query parameter has no name");
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (!allowed.has(name)) bad(`unknown query parameter ${JSON.stringify(name)}`);
    if (values.length > 1) bad(`query parameter ${name} is given ${values.length} times; give it once`);
  }
  return c.req.query();
}

/**
 * A dependency's answer (a KV or Durable Object call), or VerifierUnavailable (503) when it fails
 * or takes longer than `ms`; the dependency is named in the 503. Refusals the dependency means
 * (ApiError, JournalInputError, ConfigurationError) pass through as they are: the Durable Objects
 * answer theirs as values, so a rejection is the dependency failing.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, dependency: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new VerifierUnavailable(dependency, new Error(`timed out after ${ms} ms`))), ms);
  });
  const failed = (err: unknown): never => {
    if (err instanceof VerifierUnavailable || err instanceof ApiError || err instanceof JournalInputError || err instanceof ConfigurationError) throw err;
    throw new VerifierUnavailable(dependency, err);
  };
  return Promise.race([Promise.resolve(work).catch(failed), timeout]).finally(() => clearTimeout(timer));
}

/**
 * The token of a `Bearer` authorization header, or null. The scheme is matched without case and
 * may be followed by more than one space (RFC 9110 §11.1, §11.4: `auth-scheme 1*SP token68`).
 * Spaces and tabs after the token are no part of it (§5.5: a field value excludes trailing
 * whitespace), though a runtime may pass them on as received; the token itself is matched exactly.
 */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^bearer +(\S.*)$/i.exec(fieldValue(header));
  return m ? m[1] : null;
}

/**
 * A header's field value as RFC 9110 §5.5 defines it: without the spaces and tabs after it, which
 * a runtime may pass on as received (the leading ones it drops). By a scan, not a regex, which
 * would backtrack over a long inner run.
 */
export function fieldValue(header: string): string {
  let end = header.length;
  while (end > 0 && (header.charCodeAt(end - 1) === 0x20 || header.charCodeAt(end - 1) === 0x09)) end--;
  return end === header.length ? header : header.slice(0, end);
}

/** Constant-time bearer check: both sides are hashed first so lengths leak nothing either. */
export async function bearerMatches(header: string | undefined, token: string | undefined): Promise<boolean> {
  const presented = bearerToken(header);
  if (!token || presented === null) return false;
  const [x, y] = await Promise.all([sha256(presented), sha256(token)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

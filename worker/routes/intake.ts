/**
 * POST /v1/intake (CCS §3): a Command in, a signed admission receipt out, or an intake error
 * `{error: {code, retry, detail, trace_id?}}` and never both. Everything on the path, parsing to
 * signing, runs inside one deadline and one catch: a timeout is INTAKE_TIMEOUT, any exception
 * INTAKE_FAILED, so a failure can only ever be an error answer (fail closed).
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { audiences, intakeTimeout, issuing, MAX_INTAKE_BODY } from "../config.js";
import { ApiError, readStrictJson } from "../http.js";
import { INTAKE_RETRY, INTAKE_STATUS, type IntakeErrorCode } from "../protocol/codes.js";
import { IntakeError, parseIntake } from "../protocol/issuing/command.js";
import { issueAdmission, type Admission } from "../protocol/issuing/lifecycle.js";
import { VerifierUnavailable } from "../protocol/verify.js";
import { admissionAnswer, admissionDeps, openChallenge } from "./challenges.js";

export const intakeRoutes = new Hono<AppEnv>();

class IntakeTimeout extends Error {}

function deadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new IntakeTimeout()), ms);
  });
  // A result that arrives after the deadline is dropped, and so is its rejection.
  work.catch(() => {});
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function admit(c: Context<AppEnv>, noteTrace: (traceId: string) => void): Promise<Admission> {
  let body: unknown;
  try {
    body = await readStrictJson(c, MAX_INTAKE_BODY);
  } catch (err) {
    if (err instanceof ApiError) throw new IntakeError(err.status === 413 ? "INTAKE_OVERFLOW" : "INTAKE_MALFORMED", err.detail);
    throw err;
  }
  const intake = parseIntake(body);
  noteTrace(intake.command.trace_id);
  const served = [...audiences(c.env)];
  const audience = intake.audience ?? served[0];
  if (!audience || !served.includes(audience)) throw new IntakeError("INTAKE_MALFORMED", "audience is not one this deployment issues for", intake.command.trace_id);
  const services = c.get("services");
  const own = await issuing(c.env);
  await services.manifests.recordCurrent(services.now());
  return issueAdmission(intake, audience, own.context, admissionDeps(c, own));
}

function intakeError(c: Context<AppEnv>, err: unknown, traceId: string | null): Response {
  let code: IntakeErrorCode;
  let detail: string;
  let status: number;
  if (err instanceof IntakeError) {
    code = err.code;
    detail = err.detail;
    traceId = err.traceId ?? traceId;
    status = INTAKE_STATUS[code];
  } else if (err instanceof IntakeTimeout) {
    code = "INTAKE_TIMEOUT";
    detail = `intake did not complete within ${intakeTimeout(c.env)} ms; no receipt was issued`;
    status = INTAKE_STATUS[code];
  } else {
    code = "INTAKE_FAILED";
    detail = "intake failed; no receipt was issued";
    status = err instanceof VerifierUnavailable ? 503 : INTAKE_STATUS[code];
    console.error(JSON.stringify({ event: "intake_failed", error: String(err) }));
  }
  const error = { code, retry: INTAKE_RETRY[code], detail, ...(traceId ? { trace_id: traceId } : {}) };
  return c.json({ error }, status as 400);
}

intakeRoutes.post("/", async (c) => {
  let traceId: string | null = null;
  try {
    const admission = await deadline(admit(c, (t) => (traceId = t)), intakeTimeout(c.env));
    return c.json(admissionAnswer(admission, await openChallenge(c, admission)));
  } catch (err) {
    return intakeError(c, err, traceId);
  }
});

/**
 * Who is calling. Admin routes take ADMIN_TOKEN; verification, envelope and chain routes take a
 * relying party's token, and so do the /v1/journal port routes (each party its own journal); intake
 * and the execution lifecycle take INTAKE_TOKEN; the evidence store and reconciliation take
 * INTAKE_TOKEN or ADMIN_TOKEN. The `Bearer` scheme is matched without case (RFC 9110). All answer
 * 401 with `WWW-Authenticate` and nothing else.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app.js";
import { ApiError, bearerMatches, bearerToken } from "./http.js";
import { RELYING_PARTY_TOKEN } from "./protocol/relying-parties.js";

export const ADMIN_REALM = 'Bearer realm="countersign-admin"';
export const RELYING_PARTY_REALM = 'Bearer realm="countersign"';
export const INTAKE_REALM = 'Bearer realm="countersign-intake"';

export const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!(await bearerMatches(c.req.header("authorization"), c.env.ADMIN_TOKEN))) {
    throw new ApiError(401, "UNAUTHORIZED", "a valid admin bearer token is required", ADMIN_REALM);
  }
  await next();
};

/** Looks the bearer token up (by its SHA-256 in KV); a token of the wrong form is refused without a lookup. */
export const requireRelyingParty: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = bearerToken(c.req.header("authorization"));
  const party = token && RELYING_PARTY_TOKEN.test(token) ? await c.get("services").relyingParties.byToken(token) : null;
  if (!party) throw new ApiError(401, "UNAUTHORIZED", "a valid relying-party bearer token is required", RELYING_PARTY_REALM);
  c.set("relyingParty", party);
  await next();
};

/**
 * Intake signs in this deployment's name, so only agent runtimes holding INTAKE_TOKEN may ask
 * for a receipt; without a configured token intake is closed. Checked before the body is read.
 */
export const requireIntakeToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!(await bearerMatches(c.req.header("authorization"), c.env.INTAKE_TOKEN))) {
    throw new ApiError(401, "UNAUTHORIZED", "a valid intake bearer token is required", INTAKE_REALM);
  }
  await next();
};

/**
 * The evidence store and reconciliation: the agent runtime that holds INTAKE_TOKEN reads its own
 * local evidence store (CCS §11.1) and resolves its interrupted executions; an operator or
 * auditor does both with ADMIN_TOKEN. Relying parties (other organisations) never read it.
 */
export const requireIntakeOrAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("authorization");
  const [intake, admin] = await Promise.all([bearerMatches(header, c.env.INTAKE_TOKEN), bearerMatches(header, c.env.ADMIN_TOKEN)]);
  if (!intake && !admin) throw new ApiError(401, "UNAUTHORIZED", "a valid intake or admin bearer token is required", INTAKE_REALM);
  await next();
};

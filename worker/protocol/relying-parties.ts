/**
 * Relying parties: the callers of the verification, envelope and chain routes. Each holds a
 * bearer token (stored only as its SHA-256) and the audiences it may verify for; a call's
 * `audience` must be one of them, so nobody can burn nonces addressed to someone else.
 */
import { isJsonObject } from "./strict-json.js";
import { toBase64Url } from "./encoding.js";

export const RELYING_PARTY_NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** A supplied token: 32 to 256 characters of the URL-safe set. Generated ones are 43 + prefix. */
export const RELYING_PARTY_TOKEN = /^[A-Za-z0-9._~-]{32,256}$/;
export const MAX_AUDIENCES_PER_PARTY = 16;
export const TOKEN_PREFIX = "csrp_";

export interface RelyingParty {
  name: string;
  audiences: string[];
  /** hex(SHA-256(token)): the token itself is never stored. */
  token_sha256: string;
  created_at: number;
}

export interface Registration {
  name: string;
  audiences: string[];
  /** Supplied by the operator (provisioning, the local demo); otherwise generated. */
  token: string | null;
}

export type RegistrationParse = { ok: true; registration: Registration } | { ok: false; detail: string };

/** `{name, audiences, token?}`; every audience must be one this deployment serves. */
export function parseRegistration(body: unknown, served: ReadonlySet<string>): RegistrationParse {
  const bad = (detail: string): RegistrationParse => ({ ok: false, detail });
  if (!isJsonObject(body)) return bad("body must be {name, audiences, token?}");
  for (const key of Object.keys(body)) if (!["name", "audiences", "token"].includes(key)) return bad(`unknown field ${JSON.stringify(key)}`);
  const { name, audiences, token } = body as Record<string, unknown>;
  if (typeof name !== "string" || !RELYING_PARTY_NAME.test(name)) return bad("name must be 1-64 of [A-Za-z0-9._-]");
  if (!Array.isArray(audiences) || audiences.length === 0 || audiences.length > MAX_AUDIENCES_PER_PARTY) {
    return bad(`audiences must be a non-empty array of at most ${MAX_AUDIENCES_PER_PARTY} audiences`);
  }
  for (const a of audiences) if (typeof a !== "string" || !served.has(a)) return bad(`audience ${JSON.stringify(a)} is not one this deployment serves`);
  if (new Set(audiences).size !== audiences.length) return bad("audiences lists one audience twice");
  if (token !== undefined && (typeof token !== "string" || !RELYING_PARTY_TOKEN.test(token))) {
    return bad("token, when supplied, must be 32-256 of [A-Za-z0-9._~-]");
  }
  return { ok: true, registration: { name, audiences: audiences as string[], token: (token as string | undefined) ?? null } };
}

/** A fresh token from 32 random bytes. */
export const newToken = (random: Uint8Array): string => TOKEN_PREFIX + toBase64Url(random);

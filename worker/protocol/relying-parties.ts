/**
 * Relying parties: the callers of the verification, envelope and chain routes. Each holds a
 * bearer token (stored only as its SHA-256) and the audiences it may verify for; a call's
 * `audience` must be one of them, so nobody can burn nonces addressed to someone else.
 */
import { isJsonObject } from "./strict-json.js";
import { toBase64Url } from "./encoding.js";
import { VERIFIER_CLASSES, type VerifierClass } from "./conformance/verifier-class.js";

/**
 * 1-64 of [A-Za-z0-9._-], but not `.` or `..`: a URL's path normalisation removes those segments,
 * so `DELETE /v1/admin/relying-parties/..` (or `%2E%2E`) reaches `/v1/admin/` and a party so named
 * could never be deleted, nor its token revoked.
 */
export const RELYING_PARTY_NAME = /^(?!\.\.?$)[A-Za-z0-9._-]{1,64}$/;
/** How a refused name is explained. */
export const RELYING_PARTY_NAME_RULE = "1-64 of [A-Za-z0-9._-], not . or ..";
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
  /** CCS §9: the lowest verifier class this party accepts, per audience; any class for an audience absent here. */
  min_verifier_class?: Record<string, VerifierClass>;
  /**
   * 16 random hex drawn at registration: with the name, what this party's data (usage ledger,
   * journal, live chains, retry answers) is kept under, so a party registered later under a
   * deleted party's name starts empty. Absent on parties registered before it existed (their name alone).
   */
  registration?: string;
}

/** The identity a relying party's data is kept under: its name and registration, so a reused name inherits nothing. */
export const partyScope = (p: Pick<RelyingParty, "name" | "registration">): string => (p.registration ? `${p.name}#${p.registration}` : p.name);

export interface Registration {
  name: string;
  audiences: string[];
  /** Supplied by the operator (provisioning, the local demo); otherwise generated. */
  token: string | null;
  /** Per audience; empty when the party accepts every class. */
  min_verifier_class: Record<string, VerifierClass>;
}

export type RegistrationParse = { ok: true; registration: Registration } | { ok: false; detail: string };

const isClass = (v: unknown): v is VerifierClass => typeof v === "string" && (VERIFIER_CLASSES as readonly string[]).includes(v);

/**
 * `{name, audiences, token?, min_verifier_class?}`; every audience must be one this deployment
 * serves. `min_verifier_class` is a class for all the party's audiences, or an object naming a
 * class for some of them.
 */
export function parseRegistration(body: unknown, served: ReadonlySet<string>): RegistrationParse {
  const bad = (detail: string): RegistrationParse => ({ ok: false, detail });
  if (!isJsonObject(body)) return bad("body must be {name, audiences, token?}");
  for (const key of Object.keys(body)) if (!["name", "audiences", "token", "min_verifier_class"].includes(key)) return bad(`unknown field ${JSON.stringify(key)}`);
  const { name, audiences, token, min_verifier_class: floor } = body as Record<string, unknown>;
  if (typeof name !== "string" || !RELYING_PARTY_NAME.test(name)) return bad(`name must be ${RELYING_PARTY_NAME_RULE}`);
  if (!Array.isArray(audiences) || audiences.length === 0 || audiences.length > MAX_AUDIENCES_PER_PARTY) {
    return bad(`audiences must be a non-empty array of at most ${MAX_AUDIENCES_PER_PARTY} audiences`);
  }
  for (const a of audiences) if (typeof a !== "string" || !served.has(a)) return bad(`audience ${JSON.stringify(a)} is not one this deployment serves`);
  if (new Set(audiences).size !== audiences.length) return bad("audiences lists one audience twice");
  if (token !== undefined && (typeof token !== "string" || !RELYING_PARTY_TOKEN.test(token))) {
    return bad(TOKEN_RULE);
  }
  const min: Record<string, VerifierClass> = {};
  if (isClass(floor)) for (const a of audiences as string[]) min[a] = floor;
  else if (isJsonObject(floor)) {
    for (const [a, c] of Object.entries(floor)) {
      if (!(audiences as string[]).includes(a)) return bad(`min_verifier_class names ${JSON.stringify(a)}, which is not one of this party's audiences`);
      if (!isClass(c)) return bad(`min_verifier_class for ${a} must be "A", "B" or "C"`);
      min[a] = c;
    }
  } else if (floor !== undefined) return bad('min_verifier_class must be "A", "B" or "C", or an object of audience → class');
  return { ok: true, registration: { name, audiences: audiences as string[], token: (token as string | undefined) ?? null, min_verifier_class: min } };
}

/** A token rotation's body: `{}` for a generated token, or `{token}`. */
export function parseTokenCall(body: unknown): { ok: true; token: string | null } | { ok: false; detail: string } {
  if (!isJsonObject(body)) return { ok: false, detail: "body must be {} or {token}" };
  for (const key of Object.keys(body)) if (key !== "token") return { ok: false, detail: `unknown field ${JSON.stringify(key)}` };
  const { token } = body as Record<string, unknown>;
  if (token !== undefined && (typeof token !== "string" || !RELYING_PARTY_TOKEN.test(token))) return { ok: false, detail: TOKEN_RULE };
  return { ok: true, token: (token as string | undefined) ?? null };
}

const TOKEN_RULE = "token, when supplied, must be 32-256 of [A-Za-z0-9._~-]";

/** A fresh token from 32 random bytes. */
export const newToken = (random: Uint8Array): string => TOKEN_PREFIX + toBase64Url(random);

/**
 * Drives the Hono app with `app.request`, for tests in the workers pool (real bindings) or
 * under Node (faked bindings). Keeps the JSON plumbing out of the tests.
 */
import { createApp, type AppOptions } from "../../worker/app.js";
import type { Env } from "../../worker/env.js";
import { anchorFor, identity, makeReceipt, type Identity, type ReceiptSpec } from "../../vectors/ccs/factory.js";

export const ADMIN_TOKEN = "test-admin-token";
export const AUDIENCE = "https://relying-party.example";
export const SECOND_AUDIENCE = "https://second-party.example";
/** A fixed clock for the tests, years ahead so no purge alarm fires while they run. */
export const TEST_NOW = 1_900_000_000;

/** The relying party every harness registers (idempotently) and calls the protected routes as. */
export const RP_NAME = "test-relying-party";
export const RP_TOKEN = "test-relying-party-token-0123456789abcdef";
/** INTAKE_TOKEN of the workers-pool bindings; the harness presents it on POST /v1/intake. */
export const INTAKE_TOKEN = "test-intake-token";

/** Routes that take a relying-party token: the harness presents RP_TOKEN unless the call sets its own authorization. */
const RELYING_PARTY_ROUTES = /^\/v1\/(receipts\/verify|envelopes\/verify|chains\/|usage(\/|\?|$)|costs\/|profiles\/|journal\/)/;

export interface Harness {
  /** A call as the test relying party on the routes that need one; `authorization: ""` sends none. */
  call(path: string, init?: RequestInit): Promise<{ status: number; body: any; text: string; headers: Headers }>;
  verify(body: unknown): Promise<{ status: number; body: any; text: string }>;
  /** POST /v1/intake with the intake token; a string body is sent as it is. */
  intake(body: unknown): Promise<{ status: number; body: any; text: string }>;
  pin(anchor: unknown): Promise<{ status: number; body: any; text: string }>;
  revoke(issuer: string, kid: string): Promise<{ status: number; body: any; text: string }>;
  /** An admin call with a JSON body (or none). */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }>;
}

export function harness(env: Env, ctx: ExecutionContext, options: AppOptions = {}): Harness {
  const app = createApp({ now: () => TEST_NOW, ...options });
  let registered: Promise<unknown> | null = null;
  const register = () =>
    (registered ??= Promise.resolve(app.request("/v1/admin/relying-parties", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: RP_NAME, audiences: [AUDIENCE, SECOND_AUDIENCE], token: RP_TOKEN }),
    }, env, ctx)).then((res) => {
      if (res.status !== 201 && res.status !== 409) throw new Error(`registering the test relying party: ${res.status}`);
    }));
  const call = async (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (RELYING_PARTY_ROUTES.test(path) && !headers.has("authorization")) {
      await register();
      headers.set("authorization", `Bearer ${RP_TOKEN}`);
    }
    if (path === "/v1/intake" && !headers.has("authorization")) headers.set("authorization", `Bearer ${INTAKE_TOKEN}`);
    if (headers.get("authorization") === "") headers.delete("authorization");
    const res = await app.request(path, { ...init, headers }, env, ctx);
    const text = await res.text();
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON; the test looks at text */
    }
    return { status: res.status, body, text, headers: res.headers };
  };
  const json = (method: string, body: unknown, admin = false): RequestInit => ({
    method,
    headers: { "content-type": "application/json", ...(admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    call,
    verify: (body) => call("/v1/receipts/verify", json("POST", body)),
    intake: (body) => call("/v1/intake", json("POST", body)),
    pin: (anchor) => call("/v1/admin/anchors", json("PUT", anchor, true)),
    revoke: (issuer, kid) => call("/v1/admin/anchors/revoke", json("POST", { issuer, kid }, true)),
    admin: (method, path, body) =>
      call(path, body === undefined ? { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } } : json(method, body, true)),
  };
}

let counter = 0;
/** A pinned-able issuer identity unique to one test, and a maker of its receipts. */
export async function issuerFor(test: string) {
  const id: Identity = await identity(test, `https://${test.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.example`, "k1");
  const receipt = (extra: Partial<ReceiptSpec> = {}) =>
    makeReceipt(id, { label: `${test}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter, ...extra });
  const body = async (extra: Partial<ReceiptSpec> = {}, call: Record<string, unknown> = {}) => {
    const { receipt: r, request } = await receipt(extra);
    return { receipt: r, audience: AUDIENCE, request, ...call } as Record<string, any>;
  };
  return { id, anchor: anchorFor(id), receipt, body };
}

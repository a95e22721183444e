/**
 * `/openapi.json` covers every route of the app, and what the routes really accept and answer
 * validates against it: sample calls (the committed vectors among them) and their answers, the
 * error answers included.
 */
import { Validator, type Schema } from "@cfworker/json-schema";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { OPERATIONS } from "../../worker/contract/openapi.js";
import { admissionAnswer } from "../../worker/routes/challenges.js";
import { DOCUMENTED_RECEIPT_FIELDS, Receipt } from "../../worker/contract/schemas.js";
import { CALL_ERROR_CODES, FAILURE_CODES, INTAKE_ERROR_CODES, INTAKE_RETRY } from "../../worker/protocol/codes.js";
import { parseReceipt } from "../../worker/protocol/receipt.js";
import { parseChain } from "../../worker/protocol/chain.js";
import { parseSeal, signSeal } from "../../worker/protocol/chain-seal.js";
import { fromHex } from "../../worker/protocol/encoding.js";
import { parseRegistration } from "../../worker/protocol/relying-parties.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { nodeEnv } from "../../cli/offline-env.js";
import { ccsVectors, propagationVectors as pv, rawBodyOf } from "../support/vectors.js";
import { RP_TOKEN } from "../support/app-harness.js";
import anchorPinSchema from "../../kv-schemas/anchor-pin.schema.json" with { type: "json" };
import anchorKeySchema from "../../kv-schemas/anchor-key.schema.json" with { type: "json" };

const ADMIN = { authorization: "Bearer test-admin-token", "content-type": "application/json" };
const RP = { authorization: `Bearer ${RP_TOKEN}`, "content-type": "application/json" };
const { env, ledgerStub, ctx } = nodeEnv({ ORG_ID: pv.org_id, AUDIENCES: `${ccsVectors.audience},https://second-party.example`, ...ccsVectors.secrets });
const app = createApp({ now: () => ccsVectors.now, verifier: nobleVerifier, ledgerStub });
let doc: any;
/** A signing seed for the tests that need this deployment's own identity (the public demo seed of .dev.vars.example). */
const OWN_SEED = "fb477c555263404d1ed11ab838d941774da0329b7907d835537dc0740400237f";

/** The document's schema for one operation's request body or one response, as a standalone JSON Schema. */
function schemaAt(ref: string): Validator {
  const defs = JSON.parse(JSON.stringify(doc.components.schemas).replaceAll("#/components/schemas/", "#/$defs/"));
  return new Validator({ $defs: defs, $ref: ref.replace("#/components/schemas/", "#/$defs/") } as Schema, "2020-12", false);
}

const honoPath = (openApiPath: string) => openApiPath.replace(/\{(\w+)\}/g, ":$1");

async function exercise(method: string, path: string, headers: Record<string, string>, body?: string) {
  const res = await app.request(path, { method: method.toUpperCase(), headers, body }, env, ctx);
  const text = await res.text();
  return { status: res.status, text, json: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null };
}

/** Validates a call and its answer against the operation the route belongs to. */
function conforms(opPath: string, method: string, request: unknown, answer: { status: number; json: unknown }) {
  const op = doc.paths[opPath]?.[method];
  expect(op, `${method} ${opPath} is documented`).toBeDefined();
  if (request !== undefined && op.requestBody) {
    const check = schemaAt(op.requestBody.content["application/json"].schema.$ref).validate(request);
    expect(check.errors.map((e) => e.error), `${method} ${opPath} request`).toEqual([]);
  }
  const response = op.responses[String(answer.status)];
  expect(response, `${method} ${opPath} documents status ${answer.status}`).toBeDefined();
  const check = schemaAt(response.content["application/json"].schema.$ref).validate(answer.json);
  expect(check.errors.map((e) => `${e.instanceLocation} ${e.error}`), `${method} ${opPath} ${answer.status} answer`).toEqual([]);
}

beforeAll(async () => {
  doc = (await exercise("get", "/openapi.json", {})).json;
  await exercise("post", "/v1/admin/relying-parties", ADMIN, JSON.stringify({ name: "openapi", audiences: [ccsVectors.audience], token: RP_TOKEN }));
  for (const anchor of [...ccsVectors.anchors, ...pv.anchors]) await exercise("put", "/v1/admin/anchors", ADMIN, JSON.stringify(anchor));
});

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1 and lists every failure and call-error code", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.schemas.FailureCode.enum).toEqual([...FAILURE_CODES]);
    expect(doc.components.schemas.CallErrorCode.enum).toEqual([...CALL_ERROR_CODES]);
  });

  it("lists every intake error code, with its retry hint required, and the intake 401 in the shape it has", async () => {
    expect(doc.components.schemas.IntakeErrorCode.enum).toEqual([...INTAKE_ERROR_CODES]);
    // Signing configured, so a Command reaches its delegation (the other errors are found before).
    const intake = { ...env, INTAKE_TOKEN: "openapi-intake-token", ISSUER: "https://countersign.example", SIGNING_KEY: OWN_SEED, SIGNING_KID: "openapi-own-1" } as typeof env;
    const post = async (headers: Record<string, string>, body: string) => {
      const res = await app.request("/v1/intake", { method: "POST", headers, body }, intake, ctx);
      const text = await res.text();
      return { status: res.status, text, json: JSON.parse(text) };
    };
    const unauthorised = await post({ "content-type": "application/json" }, "{}");
    expect([unauthorised.status, unauthorised.json.error.code]).toEqual([401, "UNAUTHORIZED"]);
    conforms("/v1/intake", "post", undefined, unauthorised);
    const token = { authorization: "Bearer openapi-intake-token", "content-type": "application/json" };
    // A Level 0 parent is refused by its shape, before its HMAC is read.
    const level0 = { trace_id: "00000000000000aa", verdict: "allow", timestamp: ccsVectors.now - 2, tool: "search_web", params_hash: "0".repeat(16), rule_summary: "SEC-004=allow", receipt: "0".repeat(32) };
    const delegated = JSON.stringify({ intake_version: "1.3", agent_id: "openapi-agent", tool: "search_web", params: { query: "x" }, timestamp: ccsVectors.now - 1, trace_id: "00000000000000ab", delegation_chain: level0 });
    for (const [body, code] of [["{not json", "INTAKE_MALFORMED"], ["{}", "INTAKE_MISSING_FIELD"], [JSON.stringify({ intake_version: "1.2" }), "INTAKE_VERSION_UNSUPPORTED"], [delegated, "LEVEL0_NOT_ACCEPTED"]] as const) {
      const answer = await post(token, body);
      expect([answer.json.error.code, answer.json.error.retry], answer.text).toEqual([code, INTAKE_RETRY[code]]);
      conforms("/v1/intake", "post", undefined, answer);
      // What the document allows is what the route answers: a code outside the list, or no retry hint, does not validate.
      const schema = schemaAt(doc.paths["/v1/intake"].post.responses[String(answer.status)].content["application/json"].schema.$ref);
      expect(schema.validate({ error: { ...answer.json.error, code: "SOMETHING_ELSE" } }).valid).toBe(false);
      const { retry: _retry, ...noRetry } = answer.json.error;
      expect(schema.validate({ error: noRetry }).valid).toBe(false);
    }
  });

  it("documents every route the app serves, and nothing it does not", () => {
    // The verifier manifest route is served as a wildcard whose handler reads `{id}/manifest` itself
    // (worker/routes/manifests.ts, verifierIdOfPath; the pattern cost the trie router quadratic time).
    const wildcards: Record<string, string> = { "/v1/verifiers/*": "/v1/verifiers/:verifier_id/manifest" };
    const served = app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method.toLowerCase()} ${wildcards[r.path] ?? r.path.replace(/\{[^}]*\}/g, "")}`);
    const documented = OPERATIONS.map((op) => `${op.method} ${honoPath(op.path)}`);
    expect([...new Set(served)].sort()).toEqual([...new Set(documented)].sort());
  });

  it("documents the intake answer with every member the intake and challenge routes answer", () => {
    const schema = doc.components.schemas.IntakeAnswer;
    const full = admissionAnswer({ receipt: {}, runtime_context: { x: 1 }, results: [] } as never, {} as never);
    expect(Object.keys(schema.properties).sort()).toEqual([...Object.keys(full), "idempotent_replay"].sort());
    expect(schema.required).toEqual(["receipt", "rules"]);
  });

  it("documents the issuer view's previous keys, revocations and sequence resets, which GET /v1/issuers/{issuer} answers", () => {
    expect(doc.components.schemas.IssuerView.required).toEqual(expect.arrayContaining(["previous_keys", "revoked", "sequence_resets"]));
  });

  it("documents the decision stats with every member GET /v1/admin/stats answers", () => {
    expect(doc.components.schemas.DecisionStats.required).toEqual(expect.arrayContaining(["from", "to", "retention_minutes", "totals", "per_minute", "isolate"]));
  });

  it("documents the Idempotency-Key header on both routes that honour it, the receipt and the envelope route", () => {
    for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify"]) {
      expect((doc.paths[path].post.parameters ?? []).map((p: { name: string }) => p.name), path).toContain("Idempotency-Key");
    }
  });

  it("names on each route only the 403 codes that route answers", () => {
    // AUDIENCE_NOT_ALLOWED where a call or its receipt names an audience; CHAIN_NOT_OWNED on the live chain routes alone.
    const forbidden = (method: string, path: string) => String(doc.paths[path][method].responses["403"].description);
    for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify"]) {
      expect(forbidden("post", path), path).toContain("AUDIENCE_NOT_ALLOWED");
      expect(forbidden("post", path), path).not.toContain("CHAIN_NOT_OWNED");
    }
    expect(forbidden("post", "/v1/chains/{chain_id}/hops")).toMatch(/CHAIN_NOT_OWNED[\s\S]*AUDIENCE_NOT_ALLOWED/);
    expect(forbidden("get", "/v1/chains/{chain_id}")).toContain("CHAIN_NOT_OWNED");
    expect(forbidden("get", "/v1/chains/{chain_id}")).not.toContain("AUDIENCE_NOT_ALLOWED");
  });

  it("documents the receipt's length bounds on tool, issuer and audience, as the hand-written check refuses them", () => {
    const valid = ccsVectors.vectors.flatMap((v) => v.calls as { body?: { receipt: Record<string, unknown>; level?: 0 }; expect: { valid: boolean } }[]).find((c) => c.body && c.expect.valid && c.body.level === undefined)!.body!.receipt;
    for (const [field, long] of [["tool", "t".repeat(257)], ["issuer", `https://${"a".repeat(249)}`], ["audience", `https://${"a".repeat(249)}`]] as const) {
      expect(parseReceipt({ ...valid, [field]: long }).ok, field).toBe(false);
      expect(Receipt.safeParse({ ...valid, [field]: long }).success, field).toBe(false);
      expect(doc.components.schemas.Receipt.properties[field].maxLength, field).toBe(256);
    }
  });

  it("documents the chain and the seal with the bounds the route's own checks refuse (parseChain, parseSeal)", async () => {
    const chain = pv.chains.find((v) => v.expect.chain_valid)!.body.chain as Record<string, unknown> & { entries: unknown[] };
    const seal = signSeal({ chain_id: "doc-chain", total_hops: 1, summary_hash: `sha256:${"0".repeat(64)}`, tail: `sha256:${"1".repeat(64)}` }, { issuer: "https://countersign.example", kid: "k-1", seed: fromHex(OWN_SEED)! }, 1);
    const chains = schemaAt("#/components/schemas/Chain");
    const seals = schemaAt("#/components/schemas/ChainSeal");
    expect(parseChain(chain).ok && chains.validate(chain).valid).toBe(true);
    expect(parseSeal(seal).ok && seals.validate(seal).valid).toBe(true);
    for (const bad of [{ ...chain, chain_id: "" }, { ...chain, chain_id: "a b" }, { ...chain, entries: [] }, { ...chain, entries: Array(65).fill(chain.entries[0]) }]) {
      expect(parseChain(bad).ok).toBe(false);
      expect(chains.validate(bad).valid, JSON.stringify(bad).slice(0, 80)).toBe(false);
    }
    for (const bad of [{ ...seal, tail: null }, { ...seal, type: "countersign.chain-seal.v2" }, { ...seal, total_hops: 0 }, { ...seal, chain_id: "" }]) {
      expect(parseSeal(bad).ok).toBe(false);
      expect(seals.validate(bad).valid, JSON.stringify(bad).slice(0, 80)).toBe(false);
    }
  });

  it("documents a relying party's name and token as the registration refuses them", () => {
    // The body schema said {name: string, token: string}: no bound, no charset, and '.' and '..' (refused since cffe043) allowed.
    const { name, token } = doc.components.schemas.RelyingPartyRegistration.properties;
    const named = new RegExp(name.pattern);
    const tokened = new RegExp(token.pattern);
    const body = (over: Record<string, unknown>) => ({ name: "payments-7", audiences: ["https://relying-party.example"], ...over });
    for (const n of ["payments-7", "a", "a.b", "...", "x".repeat(64), ".", "..", "", "x".repeat(65), "a/b", "a b", "é"]) {
      expect([n, named.test(n)]).toEqual([n, parseRegistration(body({ name: n }), new Set(["https://relying-party.example"])).ok]);
    }
    for (const t of ["t".repeat(32), "A.b_c~d-".repeat(4), "t".repeat(256), "t".repeat(31), "t".repeat(257), `${"t".repeat(31)} `, `${"t".repeat(31)}+`]) {
      expect([t, tokened.test(t)]).toEqual([t, parseRegistration(body({ token: t }), new Set(["https://relying-party.example"])).ok]);
    }
  });

  it("names in AnchorPin every member the pin's schema takes (review rv-61: verifier_class, audit and shared_secret were missing)", () => {
    const description: string = doc.components.schemas.AnchorPin.description;
    const members = (d: string) => [...d.matchAll(/([a-z_]+)\??(?=[,}\]:])/g)].map((m) => m[1]);
    const outer = description.slice(description.indexOf("{"));
    const keyPart = outer.slice(outer.indexOf("[{"));
    expect(new Set(members(outer.slice(0, outer.indexOf("[{"))))).toEqual(new Set(Object.keys(anchorPinSchema.properties)));
    expect(new Set(members(keyPart))).toEqual(new Set(Object.keys(anchorKeySchema.properties)));
    for (const name of anchorPinSchema.required) expect(outer).not.toContain(`${name}?`);
  });

  it("documents the receipt with exactly the fields the hand-written check knows", () => {
    expect(Object.keys(Receipt.shape).sort()).toEqual([...DOCUMENTED_RECEIPT_FIELDS].sort());
    for (const v of ccsVectors.vectors) for (const c of v.calls as { body?: { receipt: unknown; level?: 0 }; expect: { valid: boolean } }[]) if (c.body && c.expect.valid && c.body.level === undefined) expect(Receipt.safeParse(c.body.receipt).success).toBe(true);
  });
});

describe("calls and answers conform to the document", () => {
  it("every receipt vector call (valid, invalid and malformed) and its answer", async () => {
    for (const v of ccsVectors.vectors) {
      for (const c of v.calls) {
        const answer = await exercise("post", "/v1/receipts/verify", RP, rawBodyOf(c));
        conforms("/v1/receipts/verify", "post", "body" in c && c.expect.valid ? c.body : undefined, answer);
      }
    }
  });

  it("every envelope and chain vector and its answer", async () => {
    for (const v of pv.envelopes) for (const c of v.calls) conforms("/v1/envelopes/verify", "post", c.expect.valid ? c.body : undefined, await exercise("post", "/v1/envelopes/verify", RP, JSON.stringify(c.body)));
    for (const v of pv.chains) conforms("/v1/chains/verify", "post", v.expect.chain_valid ? v.body : undefined, await exercise("post", "/v1/chains/verify", RP, JSON.stringify(v.body)));
  });

  it("error answers: 401, 403, 404, 400, 413 in their documented shapes", async () => {
    const body = (ccsVectors.vectors[0].calls[0] as { body: Record<string, unknown> }).body;
    conforms("/v1/receipts/verify", "post", undefined, await exercise("post", "/v1/receipts/verify", { "content-type": "application/json" }, JSON.stringify(body)));
    conforms("/v1/receipts/verify", "post", undefined, await exercise("post", "/v1/receipts/verify", RP, JSON.stringify({ ...body, audience: "https://second-party.example" })));
    conforms("/v1/receipts/verify", "post", undefined, await exercise("post", "/v1/receipts/verify", RP, JSON.stringify({ ...body, extra: 1 })));
    conforms("/v1/receipts/verify", "post", undefined, await exercise("post", "/v1/receipts/verify", RP, JSON.stringify({ ...body, request: { blob: "x".repeat(300_000) } })));
    conforms("/v1/issuers/{issuer}", "get", undefined, await exercise("get", `/v1/issuers/${encodeURIComponent("https://nobody.example")}`, {}));
    conforms("/v1/admin/relying-parties", "post", undefined, await exercise("post", "/v1/admin/relying-parties", { "content-type": "application/json" }, "{}"));
    // A method a decision route does not serve: 404 in the decision routes' error shape, as its 401 is; elsewhere {error} alone.
    for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify"]) {
      const unauthenticated = await exercise("patch", path, { "content-type": "application/json" }, "{}");
      const wrongMethod = await exercise("patch", path, RP, "{}");
      expect([unauthenticated.status, unauthenticated.json.decision, wrongMethod.status, wrongMethod.json.error.code, wrongMethod.json.decision]).toEqual([401, "reject", 404, "NOT_FOUND", "reject"]);
      expect(schemaAt("#/components/schemas/DecisionError").validate(wrongMethod.json).errors).toEqual([]);
    }
    const elsewhere = await exercise("get", "/v1/nothing-here", {});
    expect([elsewhere.status, elsewhere.json]).toEqual([404, { error: { code: "NOT_FOUND", detail: "no route GET /v1/nothing-here" } }]);
  });

  it("the admin and identity routes", async () => {
    const issuer = ccsVectors.anchors[0].issuer;
    conforms("/v1/issuers/{issuer}", "get", undefined, await exercise("get", `/v1/issuers/${encodeURIComponent(issuer)}`, {}));
    const pin = ccsVectors.anchors[0];
    conforms("/v1/admin/anchors", "put", pin, await exercise("put", "/v1/admin/anchors", ADMIN, JSON.stringify(pin)));
    const registration = { name: "sample-party", audiences: [ccsVectors.audience] };
    conforms("/v1/admin/relying-parties", "post", registration, await exercise("post", "/v1/admin/relying-parties", ADMIN, JSON.stringify(registration)));
    conforms("/v1/admin/relying-parties", "get", undefined, await exercise("get", "/v1/admin/relying-parties", ADMIN));
    conforms("/v1/admin/relying-parties/{name}", "delete", undefined, await exercise("delete", "/v1/admin/relying-parties/sample-party", ADMIN));
    const revoke = { issuer: ccsVectors.anchors[0].issuer, kid: ccsVectors.anchors[0].keys[0].kid };
    const revoked = await exercise("post", "/v1/admin/anchors/revoke", ADMIN, JSON.stringify(revoke));
    conforms("/v1/admin/anchors/revoke", "post", revoke, revoked);
    conforms("/v1/admin/revocations/{fingerprint}", "get", undefined, await exercise("get", `/v1/admin/revocations/${revoked.json.fingerprint}`, ADMIN));
    conforms("/v1/admin/revocations/{fingerprint}", "get", undefined, await exercise("get", `/v1/admin/revocations/${"0".repeat(64)}`, ADMIN));
    conforms("/healthz", "get", undefined, await exercise("get", "/healthz", {}));
  });

  it("a decision route's 4xx always carries its error, as README's one error shape says; a 200 decision never does (review rv-105)", async () => {
    // The 4xx/5xx of the receipt and envelope routes were documented as Decision, whose `error` was optional: a client could not rely on error.code there.
    for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify"]) {
      const refused = await exercise("post", path, RP, "{not json");
      expect([refused.status, refused.json.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
      for (const status of ["400", "401", "403", "413", "500", "503"]) {
        const schema = schemaAt(doc.paths[path].post.responses[status].content["application/json"].schema.$ref);
        expect(schema.validate(refused.json).valid, `${path} ${status}`).toBe(true);
        const { error: _error, ...withoutError } = refused.json;
        expect(schema.validate(withoutError).valid, `${path} ${status} without error`).toBe(false);
      }
    }
    const body = (ccsVectors.vectors[0].calls[0] as { body: Record<string, unknown> }).body;
    const decided = await exercise("post", "/v1/receipts/verify", RP, JSON.stringify({ ...body, mode: "audit" }));
    expect(decided.status).toBe(200);
    conforms("/v1/receipts/verify", "post", undefined, decided);
    expect(schemaAt("#/components/schemas/Decision").validate({ ...decided.json, error: { code: "INTERNAL_ERROR", detail: "x" } }).valid).toBe(false);
  });

  it("documents every member of the sequence reset's answer (review rv-105: at, reason and by were answered, not documented)", async () => {
    const issuer = pv.anchors[0].issuer;
    const reset = { issuer, kid: pv.anchors[0].keys[0].kid, reason: "openapi: the issuer's numbering restarted" };
    const answer = await exercise("post", "/v1/admin/anchors/reset-sequence", ADMIN, JSON.stringify(reset));
    expect(answer.status, answer.text).toBe(200);
    conforms("/v1/admin/anchors/reset-sequence", "post", reset, answer);
    const schema = doc.components.schemas.SequenceResetAnswer;
    expect(Object.keys(answer.json).sort()).toEqual(Object.keys(schema.properties).sort());
    expect(schema.required.sort()).toEqual(Object.keys(answer.json).sort());
    // The same entry GET /v1/issuers/{issuer} lists.
    const listed = (await exercise("get", `/v1/issuers/${encodeURIComponent(issuer)}`, {})).json.sequence_resets.at(-1);
    const { issuer: _issuer, ...entry } = answer.json;
    expect(listed).toEqual(entry);
  });

  it("a configuration history that cannot be read: 503 VERIFIER_UNAVAILABLE, documented", async () => {
    const own = nodeEnv({ ISSUER: "https://countersign.example", ORG_ID: pv.org_id, AUDIENCES: ccsVectors.audience, ...ccsVectors.secrets, SIGNING_KEY: OWN_SEED, SIGNING_KID: "openapi-own-1" });
    const get = own.env.ANCHORS.get.bind(own.env.ANCHORS);
    const down = { ...own.env, ANCHORS: { ...own.env.ANCHORS, get: (key: string, type?: "json") => (key.startsWith("config:") ? Promise.reject(new Error("kv down")) : get(key, type as "json")) } } as typeof env;
    const res = await app.request(`/v1/config/sha256:${"0".repeat(64)}`, { method: "GET" }, down, own.ctx);
    const text = await res.text();
    const answer = { status: res.status, text, json: JSON.parse(text) };
    expect([answer.status, answer.json.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    conforms("/v1/config/{hash}", "get", undefined, answer);
  });

  it("this deployment's own manifest once its signing key is revoked: 503 SIGNING_KEY_REVOKED, documented", async () => {
    // Its own app and storage: the revocation is for good.
    const own = nodeEnv({
      ISSUER: "https://countersign.example", ORG_ID: pv.org_id, AUDIENCES: ccsVectors.audience, ...ccsVectors.secrets,
      SIGNING_KEY: OWN_SEED, SIGNING_KID: "openapi-own-1",
    });
    const ownApp = createApp({ now: () => ccsVectors.now, verifier: nobleVerifier, ledgerStub: own.ledgerStub });
    const call = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const res = await ownApp.request(path, { method: method.toUpperCase(), headers, body }, own.env, own.ctx);
      const text = await res.text();
      return { status: res.status, text, json: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null };
    };
    const issuerDoc = (await call("get", "/.well-known/ccs-issuer", {})).json;
    expect((await call("put", "/v1/admin/anchors", ADMIN, JSON.stringify(issuerDoc))).status).toBe(200);
    const before = await call("get", "/.well-known/ccs-manifest", {});
    expect(before.status, before.text).toBe(200);
    conforms("/.well-known/ccs-manifest", "get", undefined, before);
    const revoke = { issuer: issuerDoc.issuer, kid: issuerDoc.keys[0].kid };
    expect((await call("post", "/v1/admin/anchors/revoke", ADMIN, JSON.stringify(revoke))).status).toBe(200);
    const after = await call("get", "/.well-known/ccs-manifest", {});
    expect([after.status, after.json?.error?.code]).toEqual([503, "SIGNING_KEY_REVOKED"]);
    conforms("/.well-known/ccs-manifest", "get", undefined, after);
  });
});

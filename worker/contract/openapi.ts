/**
 * The OpenAPI 3.1 document, built from the schemas the routes validate with and from the closed
 * code lists. Every route of the app has an operation here; a test holds the two together.
 */
import { z } from "zod";
import { CALL_ERROR_CODES, FAILURE_CODES } from "../protocol/codes.js";
import * as S from "./schemas.js";

type Auth = "admin" | "relying-party" | "intake" | "intake-or-admin" | "none";

export interface Operation {
  method: "get" | "post" | "put" | "delete";
  /** OpenAPI form: `{param}`. */
  path: string;
  summary: string;
  tag: string;
  auth: Auth;
  body?: z.ZodType;
  /** The body may be left out altogether (no bytes), which reads as `{}`. */
  bodyOptional?: true;
  parameters?: { name: string; in: "path" | "query" | "header"; description: string; required?: boolean }[];
  /** Status → schema (JSON), or "html" for the status page. */
  responses: Record<number, { description: string; schema?: z.ZodType; html?: true }>;
}

const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_TEXT[s], schema: S.ErrorAnswer }]));
const decisionErrors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { description: ERROR_TEXT[s], schema: S.DecisionError }]));
const ERROR_TEXT: Record<number, string> = {
  400: "malformed call (MALFORMED_REQUEST, or the subject's own code)",
  401: "no valid bearer token (UNAUTHORIZED, with WWW-Authenticate)",
  403: "the call's audience is not one of the token's (AUDIENCE_NOT_ALLOWED)",
  404: "not found (NOT_FOUND)",
  409: "conflicts with what is held (the code says which)",
  413: "body too large (REQUEST_TOO_LARGE)",
  422: "the receipt does not verify",
  500: "a fault of ours (INTERNAL_ERROR) or an incomplete configuration (SERVICE_MISCONFIGURED)",
  503: "a dependency failed or timed out (VERIFIER_UNAVAILABLE): fail closed, retry later",
};

/** The 503 of a route that signs under this deployment's own key: a dependency, or that key revoked (no retry helps). */
const signingUnavailable = { 503: { description: `${ERROR_TEXT[503]}; or SIGNING_KEY_REVOKED: this deployment's signing key is revoked, nothing is signed until it is re-keyed (a retry does not help)`, schema: S.ErrorAnswer } };

const pathParam = (name: string, description: string) => ({ name, in: "path" as const, description, required: true });

export const OPERATIONS: Operation[] = [
  { method: "get", path: "/", summary: "status page: pinned issuers and keys, decisions over time, nonces held, live chains (self-contained HTML)", tag: "service", auth: "none", responses: { 200: { description: "the page", html: true } } },
  { method: "get", path: "/healthz", summary: "liveness", tag: "service", auth: "none", responses: { 200: { description: "serving", schema: S.Health } } },
  { method: "get", path: "/openapi.json", summary: "this document", tag: "service", auth: "none", responses: { 200: { description: "OpenAPI 3.1", schema: S.OpenApiDocument } } },
  {
    method: "get", path: "/.well-known/ccs-issuer", summary: "this deployment's issuer and public keys, in the anchor pin's form", tag: "identity", auth: "none",
    responses: { 200: { description: "the issuer document", schema: S.IssuerDocument }, ...errors(500) },
  },
  {
    method: "get", path: "/.well-known/ccs-manifest", summary: "this verifier's signed capability manifest, as RFC 8785 text; strong ETag, If-None-Match answers 304", tag: "identity", auth: "none",
    parameters: [{ name: "If-None-Match", in: "header", description: "an ETag seen before: 304 without a body while it is current" }],
    responses: { 200: { description: "the manifest", schema: S.Manifest }, 304: { description: "not modified" }, ...errors(500), ...signingUnavailable },
  },
  {
    method: "get", path: "/v1/verifiers/{verifier_id}/manifest", summary: "a verifier's manifest: this deployment's own, or one pinned beside its anchor", tag: "routing", auth: "none",
    parameters: [pathParam("verifier_id", "the verifier's issuer URI, percent-encoded")],
    responses: { 200: { description: "the manifest", schema: S.VerifierManifest }, ...errors(400, 404, 500), ...signingUnavailable },
  },
  {
    method: "post", path: "/v1/profiles/resolve", summary: "which verifier of this deployment's set evaluates a profile (HELD, UNDECIDED, SET_EXHAUSTED)", tag: "routing", auth: "relying-party", body: S.ResolveCall,
    responses: { 200: { description: "a per-comparison result, never a verdict", schema: S.Resolution }, ...errors(400, 401, 413, 500, 503) },
  },
  {
    method: "put", path: "/v1/admin/manifests", summary: "pin another verifier's signed manifest beside its anchor, with configurations it issued under", tag: "admin", auth: "admin", body: S.ManifestPin,
    responses: { 200: { description: "pinned", schema: S.ManifestPinned }, ...errors(400, 401, 404, 409, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/receipts/verify", summary: "enforcement validation of one receipt (consumes its nonce in enforce mode)", tag: "verification", auth: "relying-party", body: S.VerifyCall,
    parameters: [{ name: "Idempotency-Key", in: "header", description: "1-255 visible ASCII: makes an enforce call retry-safe" }],
    responses: { 200: { description: "a decision, valid or not", schema: S.Decision }, ...decisionErrors(400, 401, 403, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/envelopes/verify", summary: "an Evidence Envelope, same-org or self-contained cross-org", tag: "verification", auth: "relying-party", body: S.EnvelopeCall,
    parameters: [{ name: "Idempotency-Key", in: "header", description: "1-255 visible ASCII: makes an enforce call retry-safe" }],
    responses: { 200: { description: "a decision with the envelope's hop", schema: S.Decision }, ...decisionErrors(400, 401, 403, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/chains/verify", summary: "full or spot verification of an evidence chain, optionally under a seal", tag: "chains", auth: "relying-party", body: S.ChainVerifyCall,
    responses: { 200: { description: "the chain verdict", schema: S.ChainVerdict }, ...errors(400, 401, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/chains/{chain_id}/hops", summary: "append one hop to a live chain (its nonce is consumed)", tag: "chains", auth: "relying-party", body: S.HopCall,
    parameters: [pathParam("chain_id", "1-128 of [A-Za-z0-9._:-]"), { name: "Idempotency-Key", in: "header", description: "1-255 visible ASCII: makes the append retry-safe" }],
    responses: {
      200: { description: "appended", schema: S.HopAppended },
      400: { description: ERROR_TEXT[400], schema: S.HopRefused },
      ...errors(401),
      403: { description: "the chain is another relying party's (CHAIN_NOT_OWNED), or the receipt's audience is not one of the token's (AUDIENCE_NOT_ALLOWED)", schema: S.HopRefused },
      404: { description: "a hop other than 0 for a chain not in the registry (NOT_FOUND); a just-created chain may briefly be absent elsewhere", schema: S.ErrorAnswer },
      409: { description: "does not fit the tail (a step-7 chain code)", schema: S.HopRefused },
      422: { description: ERROR_TEXT[422], schema: S.HopRefused },
      ...errors(413, 500),
      503: { description: `${ERROR_TEXT[503]}; once the receipt was judged valid, nonce_consumed says its nonce is spent (a retry of it is a replay, unless it is the same call with the same Idempotency-Key)`, schema: S.HopRefused },
    },
  },
  {
    method: "get", path: "/v1/chains/{chain_id}", summary: "a live chain with this deployment's seal", tag: "chains", auth: "relying-party",
    parameters: [pathParam("chain_id", "1-128 of [A-Za-z0-9._:-]")],
    responses: {
      200: { description: "the chain and its seal", schema: S.LiveChain },
      ...errors(400, 401),
      403: { description: "the chain is another relying party's (CHAIN_NOT_OWNED)", schema: S.ErrorAnswer },
      ...errors(404, 500),
      ...signingUnavailable,
    },
  },
  {
    method: "post", path: "/v1/ec/receipts/verify", summary: "an EC-Agent receipt against its corpus and events (docs/ec-receipts.md)", tag: "ec-agent", auth: "none", body: S.EcVerifyCall,
    responses: { 200: { description: "{valid, reasons, findings, recomputed, support}", schema: S.EcAnswer }, ...errors(400, 413, 500) },
  },
  {
    method: "post", path: "/v1/bundles/replay", summary: "replay of an EC-Agent receipt bundle: a deterministic report", tag: "ec-agent", auth: "none", body: S.BundleCall,
    responses: { 200: { description: "the replay report (its decision: match, mismatch or manifest_invalid)", schema: S.EcAnswer }, ...errors(400, 413, 500) },
  },
  {
    method: "post", path: "/v1/support/evaluate", summary: "the lexical support predicate and the conflict-aware guard", tag: "ec-agent", auth: "none", body: S.SupportCall,
    responses: { 200: { description: "both predicates with every intermediate field", schema: S.EcAnswer }, ...errors(400, 413, 500) },
  },
  {
    method: "post", path: "/v1/intake", summary: "an agent runtime's Command, judged by the sixteen rules: a signed admission receipt, durable in the journal before it is answered", tag: "issuing", auth: "intake", body: S.IntakeCall,
    responses: { 200: { description: "the signed receipt (allow, deny or escalate)", schema: S.IntakeAnswer }, 400: { description: "INTAKE_MALFORMED, INTAKE_MISSING_FIELD or INTAKE_VERSION_UNSUPPORTED", schema: S.IntakeError }, 401: { description: ERROR_TEXT[401], schema: S.ErrorAnswer }, 409: { description: "INTAKE_TRACE_CONFLICT: the trace_id was admitted for another Command", schema: S.IntakeError }, 413: { description: "INTAKE_OVERFLOW", schema: S.IntakeError }, 422: { description: "LEVEL0_NOT_ACCEPTED: the delegation_chain is a Level 0 receipt (bare or in an envelope), of a level never taken as a parent", schema: S.IntakeError }, 500: { description: "INTAKE_FAILED", schema: S.IntakeError }, 503: { description: "INTAKE_TIMEOUT, or INTAKE_FAILED (a dependency failed, or this deployment's signing key is revoked)", schema: S.IntakeError } },
  },
  {
    method: "post", path: "/v1/intake/{trace_id}/evidence", summary: "answer a challenge with the missing evidence before its deadline: the same Command judged again, a fresh receipt", tag: "issuing", auth: "intake", body: S.EvidenceCall,
    parameters: [pathParam("trace_id", "the challenged Command's trace_id, 16 hex")],
    responses: { 200: { description: "a fresh receipt (with a challenge again while evidence is still missing)", schema: S.IntakeAnswer }, ...errors(400, 401, 404, 409, 413, 500), ...signingUnavailable },
  },
  {
    method: "post", path: "/v1/receipts/{trace_id}/start", summary: "claim the execution of an allow admission: an execution lease and its fence token", tag: "journal", auth: "intake", body: S.StartCall, bodyOptional: true,
    parameters: [pathParam("trace_id", "16 lowercase hex")],
    responses: { 200: { description: "claimed", schema: S.Started }, ...errors(400, 401, 404), 409: { description: "EXECUTION_HELD or EXECUTION_NOT_ELIGIBLE", schema: S.ErrorAnswer }, ...errors(413, 500, 503) },
  },
  {
    method: "post", path: "/v1/receipts/{trace_id}/finalize", summary: "record the tool's result under the fence: OUT rules, response_hash, the signed final receipt", tag: "journal", auth: "intake", body: S.FinalizeCall,
    parameters: [pathParam("trace_id", "16 lowercase hex")],
    responses: { 200: { description: "finalised (or the same finalisation again: idempotent_replay)", schema: S.Finalised }, ...errors(400, 401, 404), 409: { description: "FENCE_CONFLICT, ALREADY_FINALISED, EXECUTION_NOT_ELIGIBLE, ILLEGAL_TRANSITION or JOURNAL_REVISION_CONFLICT", schema: S.ErrorAnswer }, ...errors(413, 500), ...signingUnavailable },
  },
  {
    method: "post", path: "/v1/receipts/{trace_id}/reconcile", summary: "resolve an execution whose outcome is unknown (lapsed lease) or indeterminate; reconciliation_required from a lapsed lease passes through indeterminate", tag: "journal", auth: "intake-or-admin", body: S.ReconcileCall,
    parameters: [pathParam("trace_id", "16 lowercase hex")],
    responses: { 200: { description: "reconciled", schema: S.Finalised }, ...errors(400, 401, 404), 409: { description: "EXECUTION_HELD, EXECUTION_NOT_ELIGIBLE, ILLEGAL_TRANSITION or JOURNAL_REVISION_CONFLICT", schema: S.ErrorAnswer }, ...errors(413, 500), ...signingUnavailable },
  },
  {
    method: "get", path: "/v1/evidence/{trace_id}", summary: "the local evidence store: a record as its history derives it, the history, every receipt", tag: "journal", auth: "intake-or-admin",
    parameters: [pathParam("trace_id", "16 lowercase hex")],
    responses: { 200: { description: "the evidence", schema: S.Evidence }, ...errors(400, 401, 404, 500, 503) },
  },
  {
    method: "get", path: "/v1/evidence", summary: "pages through the evidence store by agent, tool, verdict, state and time range", tag: "journal", auth: "intake-or-admin",
    parameters: [
      { name: "agent_id", in: "query", description: "exact agent_id, 1-512 characters" },
      { name: "tool", in: "query", description: "exact tool, 1-256 characters" },
      { name: "verdict", in: "query", description: "allow, deny or escalate (of the latest receipt)" },
      { name: "state", in: "query", description: "a journal state" },
      { name: "from", in: "query", description: "created at or after, Unix seconds in decimal (at most 15 digits, and up to 6 fractional digits; no sign, exponent or hex)" },
      { name: "to", in: "query", description: "created at or before, Unix seconds in decimal (at most 15 digits, and up to 6 fractional digits; no sign, exponent or hex)" },
      { name: "cursor", in: "query", description: "next_cursor of the previous page" },
      { name: "limit", in: "query", description: "1-200 (default 50)" },
    ],
    responses: { 200: { description: "one page in (created_at, record_id) order", schema: S.EvidencePage }, ...errors(400, 401, 500, 503) },
  },
  ...([
    ["reserve", S.ReserveCall, "reserve an idempotency key for an action digest: created | existing | conflict"],
    ["append", S.AppendCall, "append one transition at an expected revision (started is entered only by claim; started → started only under the live lease, with its fence; a repeated state is refused 400 once the history holds 256 entries; a receipt must have the CCS receipt form): appended | revision-conflict | not-found | fence-conflict | illegal-transition"],
    ["claim", S.ClaimCall, "claim the execution lease: claimed (with its fence) | held | not-eligible | revision-conflict | not-found"],
    ["verify-fence", S.VerifyFenceCall, "whether a fence holds the lease: valid | fence-conflict | not-found"],
    ["load", S.LoadCall, "a record with its ordered history: found | not-found"],
    ["load-by-idempotency", S.LoadByIdempotencyCall, "a record by its idempotency key: found | not-found"],
  ] as const).map(([name, body, summary]): Operation => ({
    method: "post", path: `/v1/journal/${name}`, summary: `the journal port: ${summary}`, tag: "journal", auth: "relying-party", body,
    responses: { 200: { description: "the port's result, by kind", schema: S.JournalResult }, ...errors(400, 401, 413, 500, 503) },
  })),
  {
    method: "get", path: "/v1/config", summary: "this deployment's canonical configuration and its config_hash", tag: "issuing", auth: "none",
    responses: { 200: { description: "{config, config_hash}", schema: S.ConfigAnswer }, ...errors(500) },
  },
  {
    method: "get", path: "/v1/config/{hash}", summary: "any configuration this deployment has issued under, by its hash, with the manifest content it bound", tag: "issuing", auth: "none",
    parameters: [pathParam("hash", "sha256:<64 hex>, percent-encoded or not")],
    responses: { 200: { description: "{config, config_hash}", schema: S.ConfigAnswer }, ...errors(400, 404, 500, 503) },
  },
  {
    method: "post", path: "/v1/usage/receipts", summary: "store a usage receipt (or build one from an observed model response), with cache and budget evidence", tag: "usage", auth: "relying-party", body: S.UsageCall,
    responses: { 200: { description: "already stored, identical (stored: false)", schema: S.UsageRecord }, 201: { description: "stored", schema: S.UsageRecord }, ...errors(400, 401, 409, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/costs/estimate", summary: "a cost estimate derived from a usage receipt and a price source", tag: "usage", auth: "relying-party", body: S.UsageCall,
    responses: { 200: { description: "{estimate, stored}", schema: S.UsageRecord }, ...errors(400, 401, 404, 409, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/costs/reconcile", summary: "reconciliation of an estimate with the provider's authoritative record", tag: "usage", auth: "relying-party", body: S.UsageCall,
    responses: { 200: { description: "{reconciliation, stored}", schema: S.UsageRecord }, ...errors(400, 401, 404, 409, 413, 500, 503) },
  },
  {
    method: "get", path: "/v1/usage", summary: "the stored usage record of one invocation", tag: "usage", auth: "relying-party",
    parameters: [{ name: "invocation_id", in: "query", description: "the invocation", required: true }],
    responses: { 200: { description: "the record", schema: S.UsageRecord }, ...errors(400, 401, 404, 500, 503) },
  },
  {
    method: "get", path: "/v1/issuers/{issuer}", summary: "a pinned issuer's public anchor", tag: "anchors", auth: "none",
    parameters: [
      pathParam("issuer", "the issuer URI, percent-encoded"),
      { name: "resets_cursor", in: "query", description: "sequence_resets_next_cursor of a previous answer: the page of sequence resets older than it (any other form is 400; any other parameter too)" },
    ],
    responses: { 200: { description: "the anchor", schema: S.IssuerView }, ...errors(400, 404, 500, 503) },
  },
  {
    method: "put", path: "/v1/admin/anchors", summary: "pin or replace an issuer's anchor", tag: "admin", auth: "admin", body: S.AnchorPin,
    responses: { 200: { description: "pinned", schema: S.AnchorPinned }, ...errors(400, 401, 409, 413, 500, 503) },
  },
  {
    method: "post", path: "/v1/admin/anchors/revoke", summary: "revoke a key (by kid or fingerprint), for good; evidence in flight under it is re-validated (CCS §14)", tag: "admin", auth: "admin", body: S.KeyCall,
    responses: { 200: { description: "revoked", schema: S.Revoked }, ...errors(400, 401, 404, 413, 500, 503) },
  },
  {
    method: "get", path: "/v1/admin/revocations/{fingerprint}", summary: "what a key's revocation touched: live chains broken at a hop it signed (seal withdrawn), journal records in flight under it marked for reconciliation (CCS §14)", tag: "admin", auth: "admin",
    parameters: [pathParam("fingerprint", "the revoked key's fingerprint, 64 lowercase hex")],
    responses: { 200: { description: "the revocation and what it touched", schema: S.RevocationEffects }, ...errors(400, 401, 404, 500, 503) },
  },
  {
    method: "post", path: "/v1/admin/anchors/reset-sequence", summary: "clear a key's sequence state, audited", tag: "admin", auth: "admin", body: S.ResetCall,
    responses: { 200: { description: "reset", schema: S.SequenceReset }, ...errors(400, 401, 404, 413, 500, 503) },
  },
  {
    method: "get", path: "/v1/admin/stats", summary: "decision counts by pinned issuer and code", tag: "admin", auth: "admin",
    parameters: [{ name: "minutes", in: "query", description: "how far back in minutes, a positive integer of at most 6 digits (default 60); more than 1440 reads the 24 h retained" }],
    responses: { 200: { description: "counts", schema: S.Stats }, ...errors(400, 401, 500, 503) },
  },
  {
    method: "post", path: "/v1/admin/relying-parties", summary: "register a relying party; its token is answered once", tag: "admin", auth: "admin", body: S.Registration,
    responses: { 201: { description: "registered", schema: S.Registered }, ...errors(400, 401, 409, 413, 500, 503) },
  },
  {
    method: "get", path: "/v1/admin/relying-parties", summary: "the relying parties (never their tokens), a page at a time in name order", tag: "admin", auth: "admin",
    parameters: [
      { name: "limit", in: "query", description: "parties per page, 1-100 (default 100)" },
      { name: "cursor", in: "query", description: "next_cursor of the previous page, exactly as answered (any other cursor is 400)" },
    ],
    responses: { 200: { description: "one page", schema: S.RelyingParties }, ...errors(400, 401, 500, 503) },
  },
  {
    method: "post", path: "/v1/admin/relying-parties/{name}/token", summary: "replace a relying party's token, keeping its records; the new token is answered once and the old one refused from then on", tag: "admin", auth: "admin", body: S.TokenCall, bodyOptional: true,
    parameters: [pathParam("name", "1-64 of [A-Za-z0-9._-], not . or ..")],
    responses: { 200: { description: "the new token", schema: S.Registered }, ...errors(400, 401, 404, 409, 413, 500, 503) },
  },
  {
    method: "delete", path: "/v1/admin/relying-parties/{name}", summary: "delete a relying party: its token is refused from then on", tag: "admin", auth: "admin",
    parameters: [pathParam("name", "1-64 of [A-Za-z0-9._-], not . or ..")],
    responses: { 200: { description: "deleted", schema: S.Deleted }, ...errors(400, 401, 404, 500, 503) },
  },
];

const component = (id: string) => ({ $ref: `#/components/schemas/${id}` });
/** What an opaque slot (checked by the protocol's own parser) is documented as. */
const SLOTS: [z.ZodType, object][] = [
  // The receipt route also takes a Level 0 receipt, on a `level: 0` call.
  [S.ReceiptSlot, { anyOf: [component("Receipt"), component("Level0Receipt")] }],
  [S.EnvelopeSlot, component("Envelope")],
  [S.ChainSlot, component("Chain")],
  [S.SealSlot, component("ChainSeal")],
];

const ref = (schema: z.ZodType): { $ref: string } => {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error("every schema of an operation is registered with an id");
  return { $ref: `#/components/schemas/${id}` };
};

const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  admin: [{ admin: [] }],
  "relying-party": [{ relyingParty: [] }],
  intake: [{ intake: [] }],
  "intake-or-admin": [{ intake: [] }, { admin: [] }],
  none: [],
};

let built: object | null = null;

/** The document; built once per isolate. */
export function openApiDocument(): object {
  if (built) return built;
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    uri: (id) => `#/components/schemas/${id}`,
    override: (ctx) => {
      const slot = SLOTS.find(([s]) => (s as unknown) === ctx.zodSchema);
      if (!slot) return;
      for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[key];
      Object.assign(ctx.jsonSchema, slot[1]);
    },
  }) as { schemas: Record<string, Record<string, unknown>> };
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      tags: [op.tag],
      security: SECURITY[op.auth],
      ...(op.parameters ? { parameters: op.parameters.map((p) => ({ ...p, schema: { type: "string" } })) } : {}),
      ...(op.body ? { requestBody: { required: !op.bodyOptional, content: { "application/json": { schema: ref(op.body) } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(op.responses).map(([status, r]) => [
          status,
          { description: r.description, ...(r.html ? { content: { "text/html": { schema: { type: "string" } } } } : r.schema ? { content: { "application/json": { schema: ref(r.schema) } } } : {}) },
        ]),
      ),
    };
  }
  built = {
    openapi: "3.1.0",
    info: {
      title: "countersign",
      version: "1",
      description: "Verification of AI-agent action evidence (CCS v1.3 receipts, envelopes, chains; EC-Agent receipts). Gate on `decision`; branch on failure codes only. Every answer carries an X-Request-Id header, also in the service's one JSON log line per decision.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    paths,
    components: {
      schemas,
      securitySchemes: {
        admin: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN" },
        relyingParty: { type: "http", scheme: "bearer", description: "a relying party's token (POST /v1/admin/relying-parties)" },
        intake: { type: "http", scheme: "bearer", description: "INTAKE_TOKEN, held by the agent runtimes that submit Commands and drive their execution" },
      },
    },
    "x-failure-codes": FAILURE_CODES,
    "x-call-error-codes": CALL_ERROR_CODES,
  };
  return built;
}

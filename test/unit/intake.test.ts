import { describe, expect, it } from "vitest";
import { IntakeError, parseIntake } from "../../worker/protocol/issuing/command.js";
import { finaliseReceipt, issueAdmission, type IssuingContext } from "../../worker/protocol/issuing/lifecycle.js";
import { canonicalConfig, configHash } from "../../worker/protocol/issuing/config.js";
import { webCryptoSigner } from "../../worker/protocol/issuing/signer.js";
import { legacyPayload } from "../../worker/protocol/issuing/legacy-hmac.js";
import { issuerDocument, parseSigningIdentity } from "../../worker/protocol/issuing/identity.js";
import { buildAnchorRecord } from "../../worker/protocol/anchors.js";
import { canonicalReceipt } from "../../worker/protocol/receipt.js";
import { parseStrictJson } from "../../worker/protocol/strict-json.js";
import { jcs } from "../../worker/protocol/digest.js";
import { nobleVerifier, publicKeyFromSeed } from "../../worker/protocol/ed25519.js";
import { fromHex, toBase64Url, toHex, utf8 } from "../../worker/protocol/encoding.js";
import { createApp } from "../../worker/app.js";
import { nodeEnv } from "../../cli/offline-env.js";
import intakeVectors from "../../vectors/ccs/intake.json" with { type: "json" };

const base = { intake_version: "1.3", agent_id: "test-agent", tool: "search_web", params: { query: "weather in Tokyo" }, timestamp: 1796000000, trace_id: "0123456789abcdef" };
const codeOf = (body: unknown): string => {
  try {
    parseIntake(body);
    return "ok";
  } catch (err) {
    return (err as IntakeError).code;
  }
};

describe("intake normalisation and limits", () => {
  it("puts every string, keys included, in NFC before anything is hashed", () => {
    const decomposed = parseIntake({ ...base, agent_id: "cafe\u0301", params: { "re\u0301sume\u0301": ["e\u0301"] } }).command;
    const composed = parseIntake({ ...base, agent_id: "caf\u00e9", params: { "r\u00e9sum\u00e9": ["\u00e9"] } }).command;
    expect(decomposed).toEqual(composed);
    expect(codeOf({ ...base, params: { "\u00e9": 1, "e\u0301": 2 } })).toBe("INTAKE_MALFORMED");
  });

  it("takes UTC only: a number is Unix seconds, a string must say Z or +00:00", () => {
    expect(parseIntake({ ...base, timestamp: "2026-11-30T12:00:00Z" }).command.timestamp).toBe(1796040000);
    expect(parseIntake({ ...base, timestamp: "2026-11-30T12:00:00.5+00:00" }).command.timestamp).toBe(1796040000.5);
    expect(codeOf({ ...base, timestamp: "2026-11-30T13:00:00+01:00" })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, timestamp: "2026-11-30 12:00:00Z" })).toBe("INTAKE_MALFORMED");
  });

  it("reads RFC 3339's T and Z in either case (§5.6): the same instant, whichever case each is written in", () => {
    for (const timestamp of ["2026-11-30T12:00:00Z", "2026-11-30t12:00:00Z", "2026-11-30T12:00:00z", "2026-11-30t12:00:00z", "2026-11-30t12:00:00+00:00"]) {
      expect(parseIntake({ ...base, timestamp }).command.timestamp, timestamp).toBe(1796040000);
    }
    expect(codeOf({ ...base, timestamp: "2026-11-30T12:00:00" })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, timestamp: "2026-02-30T12:00:00Z" })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, timestamp: 1796000000000 })).toBe("INTAKE_MALFORMED");
  });

  it("refuses a time before 1970 in either form, and keeps the epoch itself", () => {
    for (const timestamp of ["1900-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59Z", -1, -0.5]) expect(codeOf({ ...base, timestamp }), String(timestamp)).toBe("INTAKE_MALFORMED");
    expect(parseIntake({ ...base, timestamp: "1970-01-01T00:00:00Z" }).command.timestamp).toBe(0);
    expect(parseIntake({ ...base, timestamp: "1970-01-01T00:00:00.25Z" }).command.timestamp).toBe(0.25);
    expect(parseIntake({ ...base, timestamp: "9999-12-31T23:59:59Z" }).command.timestamp).toBe(253402300799);
    expect(codeOf({ ...base, timestamp: "9999-12-31T23:59:59.5Z" })).toBe("INTAKE_MALFORMED");
  });

  it("takes binary params only as padded standard base64", () => {
    expect(codeOf({ ...base, params: { blob: { $base64: "aGk=" } } })).toBe("ok");
    for (const bad of ["aGk", "aGk_", "aGl=", "aG k="]) expect(codeOf({ ...base, params: { blob: { $base64: bad } } }), bad).toBe("INTAKE_MALFORMED");
  });

  it("enforces the Figure 2 limits on canonical bytes", () => {
    expect(codeOf({ ...base, tool: "t".repeat(256) })).toBe("ok");
    expect(codeOf({ ...base, tool: "t".repeat(257) })).toBe("INTAKE_OVERFLOW");
    expect(codeOf({ ...base, agent_id: "\u00e9".repeat(257) })).toBe("INTAKE_OVERFLOW");
    expect(codeOf({ ...base, params: { q: "x".repeat(65536) } })).toBe("INTAKE_OVERFLOW");
    expect(codeOf({ ...base, runtime_context: { x: "y".repeat(16384) } })).toBe("INTAKE_OVERFLOW");
    expect(codeOf({ ...base, params: { q: "x".repeat(60000) }, runtime_context: { x: "y".repeat(16000) }, delegation_chain: { a: "z".repeat(60000) } })).toBe("INTAKE_OVERFLOW");
  });

  it("names the error: version, missing field, type", () => {
    expect(codeOf({ ...base, intake_version: "1.2" })).toBe("INTAKE_VERSION_UNSUPPORTED");
    const { params: _, ...missing } = base;
    expect(codeOf(missing)).toBe("INTAKE_MISSING_FIELD");
    expect(codeOf({ ...base, params: [] })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, trace_id: "XYZ" })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, extra: 1 })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, runtime_context: { delegation: {} } })).toBe("INTAKE_MALFORMED");
    expect(codeOf({ ...base, server_profile: "superb" })).toBe("INTAKE_MALFORMED");
  });
});

describe("intake refuses prototype keys rather than letting them hide content", () => {
  const text = (params: string, extra = "") => `{"intake_version":"1.3","agent_id":"a","tool":"shell_exec","params":${params},"timestamp":1796000000,"trace_id":"0123456789abcdef"${extra}}`;

  it("a __proto__ key in params or runtime_context, at any depth, is INTAKE_MALFORMED", () => {
    expect(codeOf(parseStrictJson(text('{"__proto__":{"cmd":"rm -rf /"}}')))).toBe("INTAKE_MALFORMED");
    expect(codeOf(parseStrictJson(text('{"a":[{"__proto__":{"cmd":"rm -rf /"}}]}')))).toBe("INTAKE_MALFORMED");
    expect(codeOf(parseStrictJson(text('{}', ',"runtime_context":{"__proto__":{"delegation":{}}}')))).toBe("INTAKE_MALFORMED");
    expect(codeOf(parseStrictJson(text('{"constructor":{"prototype":1}}')))).toBe("INTAKE_MALFORMED");
  });

  it("near miss: ordinary keys that merely resemble them are kept as own members and hashed", () => {
    const { command } = parseIntake(parseStrictJson(text('{"proto":{"cmd":"ls"},"__proto":1}', ',"runtime_context":{"constructors":1}')));
    expect(jcs(command.params)).toBe('{"__proto":1,"proto":{"cmd":"ls"}}');
    expect(Object.getPrototypeOf(command.params)).toBe(Object.prototype);
    expect(command.runtime_context).toEqual({ constructors: 1 });
  });
});

describe("this deployment's identity", () => {
  const config = { ISSUER: "https://issuer.example", SIGNING_KEY: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", SIGNING_KID: "k1", LEGACY_HMAC_KEY: "01".repeat(32) };
  // Distinct valid Ed25519 public keys: those of seeds 1..16.
  const retired = (n: number) => Array.from({ length: n }, (_, i) => ({ kid: `old-${i}`, public_key: toBase64Url(publicKeyFromSeed(new Uint8Array(32).fill(i + 1))) }));
  it("refuses a PUBLISHED_KEYS whose issuer document would not fit one anchor pin (16 keys with the signing key)", async () => {
    const fifteen = parseSigningIdentity({ ...config, PUBLISHED_KEYS: JSON.stringify(retired(15)) });
    expect(fifteen.ok && fifteen.identity.published.length).toBe(16);
    const sixteen = parseSigningIdentity({ ...config, PUBLISHED_KEYS: JSON.stringify(retired(16)) });
    expect(sixteen.ok).toBe(false);
    if (!sixteen.ok) expect(sixteen.problems.join(" ")).toMatch(/PUBLISHED_KEYS lists at most 15 keys/);
    // What /.well-known/ccs-issuer would publish with fifteen pins as it is.
    if (!fifteen.ok) throw new Error("identity");
    const built = await buildAnchorRecord(issuerDocument(fifteen.identity), 1796000000);
    expect(built.kind).toBe("built");
  });
});

describe("issuing, pure", async () => {
  const identity = parseSigningIdentity({ ISSUER: "https://issuer.example", SIGNING_KEY: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", SIGNING_KID: "k1", LEGACY_HMAC_KEY: "01".repeat(32) });
  if (!identity.ok) throw new Error("identity");
  const id = identity.identity;
  const signer = webCryptoSigner(id);
  const config = await canonicalConfig({ signingKeyId: "k1" });
  const ctx: IssuingContext = { issuer: id.issuer, config, configHash: await configHash(config), ttl: 60, maxClockSkew: 30, pinnedConfigHashes: null };
  let seq = 0;
  const deps = { now: () => 1796000000.5, randomBytes: (n: number) => new Uint8Array(n).fill(7), nextSequence: async () => ++seq, signer };

  it("signs fields 1-21 in RFC 8785 form and puts the legacy HMAC of the Python-form payload in field 7", async () => {
    const { receipt } = await issueAdmission(parseIntake(base), "https://relying-party.example", ctx, deps);
    expect(receipt).toMatchObject({ issued_at: 1796000000.5, timestamp: 1796000000.5, verified_at: 1796000000.5, expires_at: 1796000060.5, nonce: "07".repeat(16), response_hash: "" });
    const signed = canonicalReceipt(receipt).signedBytes;
    expect(new TextDecoder().decode(signed)).toContain('"expires_at":1796000060.5,"issued_at":1796000000.5');
    expect(await nobleVerifier.verify(id.publicKey, "k", fromHex(receipt.signature)!, signed)).toBe(true);
    const { receipt: legacy, signature: _, ...fields } = receipt;
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await crypto.subtle.importKey("raw", id.legacyHmacKey, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]), utf8(legacyPayload(fields))));
    expect(legacy).toBe(toHex(mac).slice(0, 32));
    expect(legacyPayload(fields)).toContain("|1796000000.5|");
    // Round trip through the strict parser: the same canonical bytes.
    const back = parseStrictJson(JSON.stringify(receipt)) as typeof receipt;
    expect(canonicalReceipt(back).signedBytes).toEqual(signed);
  });

  it("finalises an allow: OUT rules, response_hash, a new nonce and sequence, the admission's bindings kept", async () => {
    const { receipt: admission } = await issueAdmission(parseIntake(base), "https://relying-party.example", ctx, deps);
    const fin = await finaliseReceipt(admission, { content: { results: ["sunny"] } }, ctx, { ...deps, randomBytes: (n) => new Uint8Array(n).fill(9), issuerKeys: async () => null, verifier: nobleVerifier });
    expect(fin.receipt.verdict).toBe("allow");
    expect(fin.receipt.response_hash).toMatch(/^sha256:/);
    expect(fin.receipt.sequence).toBeGreaterThan(admission.sequence!);
    expect(fin.receipt.nonce).not.toBe(admission.nonce);
    expect(fin.receipt.rule_summary).toBe(admission.rule_summary + "|OUT-001=allow|OUT-002=allow|OUT-003=allow|OUT-004=allow|OUT-005=allow|OUT-006=allow|OUT-007=allow|OUT-008=allow");
    for (const k of ["request_hash", "action", "params_hash", "trace_id", "config_hash", "audience", "runtime_context_hash"] as const) expect(fin.receipt[k]).toBe(admission[k]);
    const denied = await finaliseReceipt(admission, { content: "x", outcome_status: "done" }, ctx, { ...deps, issuerKeys: async () => null, verifier: nobleVerifier });
    expect(denied.receipt).toMatchObject({ verdict: "deny" });
    expect(denied.receipt.block_reason).toMatch(/OUT-007/);
    await expect(finaliseReceipt(denied.receipt, { content: "" }, ctx, { ...deps, issuerKeys: async () => null, verifier: nobleVerifier })).rejects.toThrow(/only an allow/);
    // Results already judged on this output (the finalize route's sized draft) are signed as given, the rules not run again.
    const throwing = [{ name: "OUT-999", judge: () => { throw new Error("judged twice"); } }] as never;
    const again = await finaliseReceipt(admission, { content: "x", outcome_status: "done" }, ctx, { ...deps, issuerKeys: async () => null, verifier: nobleVerifier, outputRules: throwing, judged: denied.results });
    expect([again.receipt.verdict, again.receipt.block_reason, again.receipt.rule_summary]).toEqual([denied.receipt.verdict, denied.receipt.block_reason, denied.receipt.rule_summary]);
  });

  it("the committed intake vectors verify under the vector issuer's key, and the float vector's bytes are exact", async () => {
    const key = fromHex(Buffer.from(intakeVectors.issuer.public_key, "base64url").toString("hex"))!;
    for (const v of intakeVectors.vectors) {
      const doc = v as { receipt?: unknown; receipts?: unknown[] };
      for (const r of [...(doc.receipt ? [doc.receipt] : []), ...(doc.receipts ?? [])] as { signature: string }[]) {
        expect(await nobleVerifier.verify(key, "v", fromHex(r.signature)!, canonicalReceipt(r as never).signedBytes), v.id).toBe(true);
      }
    }
    const f = intakeVectors.vectors.find((v) => v.id === "FLOAT-verdict-time")!;
    expect(new TextDecoder().decode(canonicalReceipt(f.receipt as never).signedBytes)).toBe(f.signed_text);
    expect(f.signed_text).toContain('"issued_at":1796000000.5');
    expect(f.legacy_payload).toContain("|1796000000.5|");
  });
});

describe("two independent instances under Node", () => {
  it("a receipt issued by one verifies on another that pinned the first's /.well-known/ccs-issuer", async () => {
    const vars = { ISSUER: "https://issuer-a.example", SIGNING_KEY: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", SIGNING_KID: "a-1", LEGACY_HMAC_KEY: "02".repeat(32), INTAKE_TOKEN: "intake-a" };
    const a = nodeEnv(vars);
    const b = nodeEnv();
    let seq = 0;
    const appA = createApp({ intake: { nextSequence: async () => ++seq }, ledgerStub: a.ledgerStub });
    const appB = createApp({ ledgerStub: b.ledgerStub, verifier: nobleVerifier });
    const command = { agent_id: base.agent_id, tool: base.tool, params: base.params, timestamp: Math.floor(Date.now() / 1000), trace_id: base.trace_id };
    const issued = await (await appA.request("/v1/intake", { method: "POST", headers: { authorization: "Bearer intake-a", "content-type": "application/json" }, body: JSON.stringify({ intake_version: "1.3", ...command }) }, a.env, a.ctx)).json() as any;
    expect(issued.receipt.verdict).toBe("allow");
    const doc = await (await appA.request("/.well-known/ccs-issuer", {}, a.env, a.ctx)).json();
    const admin = { authorization: "Bearer test-admin-token", "content-type": "application/json" };
    expect((await appB.request("/v1/admin/anchors", { method: "PUT", headers: admin, body: JSON.stringify(doc) }, b.env, b.ctx)).status).toBe(200);
    const rp = { name: "b-party", audiences: ["https://relying-party.example"], token: "b-party-token-0123456789abcdef0123456789" };
    expect((await appB.request("/v1/admin/relying-parties", { method: "POST", headers: admin, body: JSON.stringify(rp) }, b.env, b.ctx)).status).toBe(201);
    const answer = await (await appB.request("/v1/receipts/verify", { method: "POST", headers: { authorization: `Bearer ${rp.token}`, "content-type": "application/json" }, body: JSON.stringify({ receipt: issued.receipt, audience: "https://relying-party.example", request: command }) }, b.env, b.ctx)).json() as any;
    expect(answer).toMatchObject({ valid: true, decision: "accept", kid: "a-1", nonce_consumed: true });
  });
});

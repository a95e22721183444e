import { describe, expect, it } from "vitest";
import { BoundaryError, fromJsonText, isCredentialName, isCredentialValue, JWT_SHAPE, jwtShaped, REDACTED, redactCredentialParts, snapshotJson, type BoundaryReason } from "../../worker/protocol/boundary.js";

const refusal = (input: unknown): { reason: BoundaryReason; path: (string | number)[] } => {
  try {
    snapshotJson(input);
  } catch (err) {
    if (err instanceof BoundaryError) return { reason: err.reason, path: err.path };
    throw err;
  }
  throw new Error("the boundary accepted it");
};

class Usage {
  input_tokens = 5;
}

describe("the strict JSON boundary", () => {
  it("copies plain JSON data into a deep frozen value", () => {
    const input = { a: [1, { b: "x" }], c: null, d: true };
    const out = snapshotJson(input) as any;
    expect(out).toEqual(input);
    expect(out).not.toBe(input);
    expect(Object.isFrozen(out) && Object.isFrozen(out.a) && Object.isFrozen(out.a[1])).toBe(true);
    input.a.push(2);
    expect(out.a).toHaveLength(2);
  });

  it("admits null-prototype objects and normalises -0", () => {
    const o = Object.assign(Object.create(null), { n: -0 });
    expect(Object.is((snapshotJson(o) as any).n, 0)).toBe(true);
  });

  it("refuses a getter, whose value could change between validation and use", () => {
    let n = 0;
    expect(refusal({ usage: { get input_tokens() { return n++; } } })).toEqual({ reason: "accessor", path: ["usage", "input_tokens"] });
  });

  it("refuses a setter-only member and an accessor array element", () => {
    expect(refusal({ set x(_v: number) {} }).reason).toBe("accessor");
    const a = [1, 2];
    Object.defineProperty(a, 1, { get: () => 3, enumerable: true });
    expect(refusal(a).reason).toBe("accessor");
  });

  it("refuses a sparse array", () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(refusal({ missing: ["input_tokens", , "total_tokens"] })).toEqual({ reason: "sparse_array", path: ["missing"] });
    expect(refusal(new Array(3)).reason).toBe("sparse_array");
  });

  it("refuses an array subclass", () => {
    class Metrics extends Array<string> {}
    expect(refusal({ missing: Metrics.from(["input_tokens"]) }).reason).toBe("array_subclass");
  });

  it("refuses a __proto__ key, whether built in memory or parsed from text", () => {
    const o = JSON.parse('{"__proto__": {"attributed": true}}');
    expect(refusal(o)).toEqual({ reason: "prototype_key", path: ["__proto__"] });
    expect(() => fromJsonText('{"a": {"__proto__": {}}}')).toThrow(expect.objectContaining({ reason: "prototype_key", path: ["a", "__proto__"] }));
  });

  it("refuses constructor and prototype keys", () => {
    expect(refusal({ constructor: { name: "x" } }).reason).toBe("prototype_key");
    expect(refusal({ a: { prototype: 1 } }).reason).toBe("prototype_key");
  });

  it("refuses a class instance (a native response object, a Date, a Map)", () => {
    expect(refusal({ usage: new Usage() })).toEqual({ reason: "class_instance", path: ["usage"] });
    expect(refusal(new Date(0)).reason).toBe("class_instance");
    expect(refusal(new Map()).reason).toBe("class_instance");
  });

  it("refuses a lone surrogate in a value or a key", () => {
    expect(refusal({ model: "gpt\ud800" })).toEqual({ reason: "lone_surrogate", path: ["model"] });
    expect(refusal({ ["\udc00"]: 1 }).reason).toBe("lone_surrogate");
    expect(snapshotJson({ ok: "😀" })).toEqual({ ok: "😀" });
    expect(() => fromJsonText('{"a": "\\ud800"}')).toThrow(expect.objectContaining({ reason: "lone_surrogate" }));
  });

  it("refuses an unsafe integer and a non-finite number", () => {
    expect(refusal({ input_tokens: 2 ** 53 })).toEqual({ reason: "unsafe_integer", path: ["input_tokens"] });
    expect(refusal({ n: Number.NaN }).reason).toBe("non_finite");
    expect(refusal({ n: Infinity }).reason).toBe("non_finite");
    expect(() => fromJsonText('{"n": 9007199254740993}')).toThrow(expect.objectContaining({ reason: "unsafe_integer" }));
  });

  it("refuses an authority field at any depth, whatever its case or separators", () => {
    expect(refusal({ response: { native: { provider: { Authorization: "Bearer x" } } } })).toEqual({ reason: "authority_field", path: ["response", "native", "provider", "Authorization"] });
    expect(refusal({ a: [{ api_key: "k" }] }).reason).toBe("authority_field");
    expect(refusal({ estimate: { invoice: "INV-1" } }).reason).toBe("authority_field");
    expect(refusal({ record: { approved: true } }).reason).toBe("authority_field");
    expect(refusal({ x: { "set-cookie": "s" } }).reason).toBe("authority_field");
  });

  it("refuses symbol keys, hidden members and values JSON cannot hold", () => {
    expect(refusal({ [Symbol("s")]: 1 }).reason).toBe("symbol_key");
    expect(refusal(Object.defineProperty({}, "h", { value: 1, enumerable: false })).reason).toBe("hidden_property");
    const a: any = [1];
    a.extra = 2;
    expect(refusal(a).reason).toBe("hidden_property");
    expect(refusal({ f: () => 1 }).reason).toBe("not_json");
    expect(refusal([undefined]).reason).toBe("not_json");
    expect(snapshotJson({ u: undefined, v: 1 })).toEqual({ v: 1 });
    expect(refusal({ b: 1n }).reason).toBe("not_json");
  });

  it("refuses a cycle as nesting too deep instead of looping", () => {
    const o: any = {};
    o.self = o;
    expect(refusal(o).reason).toBe("too_deep");
  });

  it("passes the strict parser's refusals through from text", () => {
    expect(() => fromJsonText('{"a": 1, "a": 2}')).toThrow(expect.objectContaining({ reason: "duplicate_key" }));
  });
});

describe("credential redaction inside strings and by name", () => {
  it("takes a quoted value to its closing quote, past the escaped quotes inside it, and to its first quote when it has no closing one", () => {
    // Before, a value ended at its first quote, escaped or not: the rest of the password was kept.
    expect(redactCredentialParts('{"password":"hun\\"SECRET15"}')).toBe('{"password":"[redacted]"}');
    expect(redactCredentialParts("password='a\\'SECRET' rest")).toBe("password='[redacted]' rest");
    expect(redactCredentialParts('password="abc\\"')).toBe('password="[redacted]"');
    expect(redactCredentialParts('a="b\\"c" password="x" ok')).toBe('a="b\\"c" password="[redacted]" ok');
  });

  it("replaces URL userinfo and keeps the rest of the URL", () => {
    expect(redactCredentialParts("https://admin:hunter2@db.example/")).toBe("https://[redacted]@db.example/");
    expect(redactCredentialParts("postgres://u:p4ss@h/db")).toBe("postgres://[redacted]@h/db");
    expect(redactCredentialParts("dsn postgres://u:p@ss@h:5432/db?sslmode=require")).toBe("dsn postgres://[redacted]@h:5432/db?sslmode=require");
    expect(redactCredentialParts("https://ghtoken@github.com/org/repo.git")).toBe("https://[redacted]@github.com/org/repo.git");
    expect(redactCredentialParts("https://db.example/a:b?x=1 mail me@example.com")).toBe("https://db.example/a:b?x=1 mail me@example.com");
  });

  it("replaces the value of credential-named pairs and keeps the rest of the string", () => {
    const cases: [string, string][] = [
      ["password=hunter2", "password=[redacted]"],
      ["connect failed: password=hunter2 user=app", "connect failed: password=[redacted] user=app"],
      ["passwd=a pwd=b secret=c token=d api_key=e apikey=f auth=g", "passwd=[redacted] pwd=[redacted] secret=[redacted] token=[redacted] api_key=[redacted] apikey=[redacted] auth=[redacted]"],
      ["DB_PASSWORD = 'p w' CLIENT_SECRET: \"s\"", "DB_PASSWORD = '[redacted]' CLIENT_SECRET: \"[redacted]\""],
      ['{"secretKey":"k","region":"eu"}', '{"secretKey":"[redacted]","region":"eu"}'],
      ["Authorization: Bearer abc.def sent", "Authorization: [redacted] sent"],
      ["q=1&access_token=xyz&page=2", "q=1&access_token=[redacted]&page=2"],
      // Ruby and Perl hashes, Pascal and Go assignments: the value after `=>` or `:=` was kept.
      ["{:password => hunter2, user => bob}", "{:password => [redacted], user => bob}"],
      ['"api_key" => "k-123"', '"api_key" => "[redacted]"'],
      ["secret := s3cr3t;", "secret := [redacted];"],
      // A JSON document written into a JSON string: its quotes are escaped, and the value was kept.
      ['{\\"password\\":\\"hunter2\\",\\"user\\":\\"bob\\"}', '{\\"password\\":\\"[redacted]\\",\\"user\\":\\"bob\\"}'],
      ["{\\'token\\': \\'t-1 2\\'}", "{\\'token\\': \\'[redacted]\\'}"],
      // A cookie header carries every cookie in it: the session after the first `;` was kept.
      ["Cookie: lang=en; session=abc123\nHost: x", "Cookie: [redacted]\nHost: x"],
      ["set-cookie: sid=s1; Path=/; HttpOnly", "set-cookie: [redacted]"],
      ['{"cookie":"a=1; sid=s2","n":1}', '{"cookie":"[redacted]","n":1}'],
    ];
    for (const [input, output] of cases) expect(redactCredentialParts(input), input).toBe(output);
    for (const honest of ["key=order-42", "time 12:30", "author: Ada", "tokens_used=12", "status: ok", "a => b", 'path\\":\\"/tmp', "x := 1"]) expect(redactCredentialParts(honest)).toBe(honest);
  });

  it("takes a GitHub fine-grained token (github_pat_) for a credential, as SEC-003 and OUT-001 do", () => {
    const pat = "github_pat_11ABCDEFG0123456789_" + "abcdefghijklmnopqrstuvwxyz0123456789".repeat(2) + "ABCDEFGHIJ";
    expect(isCredentialValue(pat)).toBe(true);
    expect(isCredentialValue(`clone with ${pat} please`)).toBe(true);
    expect(snapshotJson({ ns: { v: `use ${pat}` } }, { credentials: "redact" })).toEqual({ ns: { v: REDACTED } });
    expect(isCredentialValue("github_pat_short")).toBe(false);
  });

  it("names credentials without case, in camelCase and snake_case forms", () => {
    for (const name of ["secretKey", "secret_key", "SECRET-KEY", "pwd", "auth", "creds", "credentials", "passphrase", "privateKey", "private_key", "dbPassword", "x-api-key", "basicAuth", "awsSecretAccessKey", "accessKey", "clientSecret", "api_token", "github_token", "clientToken", "X-Auth-Token"]) expect(isCredentialName(name), name).toBe(true);
    for (const name of ["author", "authority", "keyId", "requestId", "content-type", "passes", "tokens", "max_tokens", "tool"]) expect(isCredentialName(name), name).toBe(false);
  });

  it("names signing and HMAC keys, bearer and JWT members, subscription keys and OpenTelemetry's dotted header names as credentials (stored as sent before)", () => {
    const names = [
      "signingKey", "signing_key", "webhookSigningKey", "hmac", "hmac_key", "request_hmac", "bearer", "jwt", "id_jwt", "Ocp-Apim-Subscription-Key", "subscription_key",
      "http.request.header.authorization", "http.request.header.x-api-key", "http.request.header.cookie", "http.response.header.set-cookie", "http.request.header.proxy-authorization",
    ];
    for (const name of names) expect(isCredentialName(name), name).toBe(true);
    // What names a key or counts tokens, and the other OpenTelemetry attributes, are evidence.
    const kept = [
      "key_id", "kid", "keyId", "public_key", "signing_key_id", "signingKeyId", "token_count", "input_tokens", "max_tokens", "jwt_algorithm", "jwks_uri",
      "hmac_algorithm", "bearer_format", "subscription_id", "http.request.method", "http.request.header.content-type", "http.response.status_code", "gen_ai.usage.input_tokens",
    ];
    for (const name of kept) expect(isCredentialName(name), name).toBe(false);
    expect(redactCredentialParts("http.request.header.cookie: lang=en; sid=s3\nnext")).toBe("http.request.header.cookie: [redacted]\nnext");
    expect(redactCredentialParts("signing_key=k-1 hmac=abc kid=k2 jwt: x.y")).toBe("signing_key=[redacted] hmac=[redacted] kid=k2 jwt: [redacted]");
    expect(snapshotJson({ ns: { "http.request.header.authorization": ["opaque-1"], "http.request.method": "GET" } }, { credentials: "redact" })).toEqual({
      ns: { "http.request.header.authorization": REDACTED, "http.request.method": "GET" },
    });
  });

  it("names auth keys, and a signature or HMAC named with its digest, as credentials (stored as sent before)", () => {
    for (const name of ["X-Auth-Key", "auth_key", "DeepL-Auth-Key", "X-Hub-Signature-256", "X-Shopify-Hmac-Sha256", "hmac_sha256", "signature_sha1", "x-signature-512"]) expect(isCredentialName(name), name).toBe(true);
    for (const name of ["X-Auth-Email", "hmac_algorithm", "signature_count", "sha256", "digest_sha256", "key_256"]) expect(isCredentialName(name), name).toBe(false);
    expect(snapshotJson({ ns: { "X-Hub-Signature-256": "sha256=0123abcd", "X-Auth-Key": "c2547eb745079dac9320b638f5e225cf483cc5cfdda41" } }, { credentials: "redact" })).toEqual({
      ns: { "X-Hub-Signature-256": REDACTED, "X-Auth-Key": REDACTED },
    });
    expect(redactCredentialParts("X-Shopify-Hmac-Sha256: q1w2e3r4=")).toBe("X-Shopify-Hmac-Sha256: [redacted]");
  });

  it("keeps a boolean or null under a credential name: no credential is one, and whether HMAC or a JWT was used is evidence", () => {
    expect(snapshotJson({ ns: { use_hmac: true, verify_jwt: false, requires_auth: true, password: null, hmac: "abc", pwd: 1234, oauth: { id: "x" } } }, { credentials: "redact" })).toEqual({
      ns: { use_hmac: true, verify_jwt: false, requires_auth: true, password: null, hmac: REDACTED, pwd: REDACTED, oauth: REDACTED },
    });
    // An accessor is still never invoked.
    const getter = Object.defineProperty({}, "use_hmac", { get: () => true, enumerable: true });
    expect(snapshotJson({ ns: getter }, { credentials: "redact" })).toEqual({ ns: { use_hmac: REDACTED } });
  });

  it("stores what it redacts in place, in redact mode only; refuse mode copies strings as they are", () => {
    expect(snapshotJson({ log: "password=hunter2", dsn: "https://a:b@h/" }, { credentials: "redact" })).toEqual({ log: "password=[redacted]", dsn: "https://[redacted]@h/" });
    expect(snapshotJson({ log: "password=hunter2" })).toEqual({ log: "password=hunter2" });
  });

  it("redacts credentials in member names too: a name is a string stored in the journal", () => {
    const ghp = "ghp_" + "a".repeat(36);
    const redact = { credentials: "redact" } as const;
    expect(snapshotJson({ ns: { [`Bearer ${"x".repeat(20)}`]: 1, "password=hunter2": 3, "https://u:p@db/": 4, plain: 5 } }, redact)).toEqual({
      ns: { [REDACTED]: 1, "password=[redacted]": REDACTED, "https://[redacted]@db/": 4, plain: 5 },
    });
    expect(snapshotJson({ ns: { [ghp]: { n: 2 } } }, redact)).toEqual({ ns: { [REDACTED]: { n: 2 } } });
    expect(JSON.stringify(snapshotJson({ ns: { [ghp]: 1, "Bearer abc.def": 2 } }, { credentials: "refuse" }))).toContain(ghp);
    // Two names that redact to one are refused rather than one silently overwriting the other.
    expect(() => snapshotJson({ ns: { [ghp]: 1, "Bearer abc.def": 2 } }, redact)).toThrow(expect.objectContaining({ reason: "duplicate_key" }));
    expect(() => snapshotJson({ ns: { [REDACTED]: 1, [ghp]: 2 } }, redact)).toThrow(expect.objectContaining({ reason: "duplicate_key" }));
  });

  // Their speed is the bench's to measure, not a test's: here each is answered (a quadratic scan
  // would run past the test's own time limit).
  it("answers adversarial strings", () => {
    for (const s of ["a=".repeat(100_000), 'password:\\"'.repeat(20_000), "password:\\'a\\".repeat(20_000), "cookie:\"".repeat(20_000), "cookie=\n".repeat(30_000), 'password\\"=>'.repeat(20_000), "x://".repeat(50_000), "a:a:".repeat(50_000), "a+".repeat(100_000), 'password="'.repeat(20_000), "token:".repeat(40_000), "a".repeat(200_000)]) {
      expect(typeof redactCredentialParts(s), s.slice(0, 8)).toBe("string");
    }
  });
});

describe("the JWT shape of a credential value, read in linear time", () => {
  const seeded = (seed: number): (() => number) => {
    let s = seed >>> 0;
    return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
  };

  it("answers as the regular expression on 60,000 seeded random texts", () => {
    const rand = seeded(2701);
    const pieces = ["eyJ", "a", "aaaa", "aa", "A0", "-", "_", "e", "yJ", "0"];
    const separators = [".", ".", ".", ".", " ", "\n", "x", "-", "", "é", "%"];
    const pick = (a: string[]) => a[Math.floor(rand() * a.length)];
    let matched = 0;
    for (let i = 0; i < 60_000; i++) {
      let text = rand() < 0.5 ? pick(separators) : "";
      for (let k = 1 + Math.floor(rand() * 5); k > 0; k--) {
        if (rand() < 0.6) text += "eyJ";
        for (let j = 1 + Math.floor(rand() * 3); j > 0; j--) text += pick(pieces);
        text += pick(separators);
      }
      const expected = JWT_SHAPE.test(text);
      expect(jwtShaped(text), JSON.stringify(text)).toBe(expected);
      if (expected) matched++;
    }
    expect(matched).toBeGreaterThan(1000);
  });

  it("redacts a JWT, and reads 240 KB of eyJ- runs without blowing up (21 s as a regular expression)", () => {
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuv";
    expect(isCredentialValue(`token ${jwt}`.slice(6))).toBe(true);
    expect(snapshotJson({ ns: { v: "eyJ-".repeat(60_000) + jwt } }, { credentials: "redact" })).toEqual({ ns: { v: REDACTED } });
    expect(snapshotJson({ ns: { v: "eyJ-".repeat(60_000) } }, { credentials: "redact" })).toEqual({ ns: { v: "eyJ-".repeat(60_000) } });
    expect(isCredentialValue("eyJ_".repeat(60_000) + "eyJaaaa.bbbb")).toBe(false);
  });
});

describe("an authorization header's value in free text is redacted whole, whatever its scheme", () => {
  it("keeps no token after a scheme the pattern does not name (stored as sent before)", () => {
    for (const [text, want] of [
      ["Authorization: Bot MTk4NjIy.SECRET2", "Authorization: [redacted]"],
      ["Authorization: ApiKey SECRET3abcdef\nHost: x", "Authorization: [redacted]\nHost: x"],
      ["Authorization: SSWS 00SECRET4xyz", "Authorization: [redacted]"],
      ['Authorization: Digest username="bob", response="SECRET5" sent', "Authorization: [redacted] sent"],
      ["proxy_authorization=Bot SECRET6", "proxy_authorization=[redacted]"],
      ["Authorization: Bearer abc123 sent", "Authorization: [redacted] sent"],
      ['{"Authorization":"Bearer abc","x":1}', '{"Authorization":"[redacted]","x":1}'],
    ]) expect(redactCredentialParts(text), text).toBe(want);
    expect(snapshotJson({ a: "Authorization: Bot SECRET7" }, { credentials: "redact" })).toEqual({ a: "Authorization: [redacted]" });
  });
});

describe("a PGP private key block is a private key block", () => {
  it("is redacted whole (stored as sent before)", () => {
    const block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQSECRET27\n-----END PGP PRIVATE KEY BLOCK-----";
    expect(isCredentialValue(block)).toBe(true);
    expect(snapshotJson({ ns: { k: block } }, { credentials: "redact" })).toEqual({ ns: { k: REDACTED } });
    expect(isCredentialValue("-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQ\n-----END PGP PUBLIC KEY BLOCK-----")).toBe(false);
  });
});

/**
 * The `countersign` CLI: exit codes and outputs for valid, invalid and usage errors, keys written
 * private, and the same decisions as the Worker on every committed vector (the workers-pool suite
 * runs the same vectors through workerd against the same expectations).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { main, type Io } from "../../cli/countersign.js";
import { chainMismatches, ccsVectors, mismatches, propagationVectors as pv, rawBodyOf, vectorParty, type Answer, type ChainAnswer } from "../support/vectors.js";
import { ROOT } from "../support/paths.js";

const dir = mkdtempSync(join(tmpdir(), "countersign-cli-"));
const at = (name: string) => join(dir, name);

/** The environment the CLI runs with: the relying party's own secrets (Level 0) when a test gives them. */
let runEnv: Record<string, string | undefined> = {};

async function run(...argv: string[]) {
  let out = "";
  let err = "";
  const io: Io = { out: (t) => void (out += t), err: (t) => void (err += t), read: (p) => readFileSync(p, "utf8"), env: runEnv, fetch };
  const code = await main(argv, io);
  return { code, out, err };
}

const COMMAND = { agent_id: "agent://cli/planner", tool: "weather.lookup", params: { city: "Lisbon", units: "metric" }, timestamp: 1796000000, trace_id: "0123456789abcdef" };
const ISSUER = "https://cli-issuer.example";
const AUDIENCE = "https://relying-party.example";

async function issuerFiles(prefix: string) {
  expect((await run("keygen", "--out", at(prefix), "--kid", "k1", "--json")).code).toBe(0);
  const pub = JSON.parse(readFileSync(at(`${prefix}.pub.json`), "utf8"));
  writeFileSync(at(`${prefix}-anchors.json`), JSON.stringify({ anchors: [{ issuer: ISSUER, keys: [pub] }] }));
  writeFileSync(at("command.json"), JSON.stringify(COMMAND));
  return { key: at(`${prefix}.key`), anchors: at(`${prefix}-anchors.json`), pub };
}

describe("countersign keygen", () => {
  it("writes the seed with 0600 permissions and the public key as an anchor key entry, and never overwrites", async () => {
    const res = await run("keygen", "--out", at("k"), "--kid", "2026-01", "--json");
    expect(res.code).toBe(0);
    expect(res.err).toBe("");
    const doc = JSON.parse(res.out);
    expect(doc).toMatchObject({ kid: "2026-01", alg: "Ed25519", public_key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(statSync(at("k.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(at("k.key"), "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    const again = await run("keygen", "--out", at("k"));
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/exists/);
  });
});

describe("keygen never replaces a directory entry without --force, a link included (review rv-109)", () => {
  it("a dangling PREFIX.key link is an existing entry: exit 2, the link kept; a link to a file is replaced with --force, its target untouched", async () => {
    symlinkSync(at("dangling-target"), at("dl.key"));
    const res = await run("keygen", "--out", at("dl"));
    expect([res.code, res.err]).toEqual([2, `countersign keygen: ${at("dl.key")} exists; pass --force to overwrite\n`]);
    expect(lstatSync(at("dl.key")).isSymbolicLink()).toBe(true);
    expect(existsSync(at("dl.pub.json"))).toBe(false);
    symlinkSync(at("dangling-anchor"), at("dl2.anchor.json"));
    expect((await run("keygen", "--out", at("dl2"))).err).toMatch(/dl2\.anchor\.json exists and would no longer match/);
    writeFileSync(at("victim.txt"), "victim\n");
    symlinkSync(at("victim.txt"), at("vl.key"));
    expect((await run("keygen", "--out", at("vl"))).code).toBe(2);
    expect((await run("keygen", "--out", at("vl"), "--force")).code).toBe(0);
    expect(readFileSync(at("victim.txt"), "utf8")).toBe("victim\n");
    expect(lstatSync(at("vl.key")).isSymbolicLink()).toBe(false);
    expect(statSync(at("vl.key")).mode & 0o777).toBe(0o600);
  });
});

describe("standard input is one input's at most, and --out - is no file named - (review rv-109)", () => {
  it("two inputs given as - are a usage error naming both, before anything is read", async () => {
    const { key, anchors } = await issuerFiles("stdin2");
    const cases: [string[], string][] = [
      [["verify", "-", "--anchors", "-"], "the file to verify and --anchors"],
      [["verify", "--lines", "-", "--anchors", "-"], "the file to verify and --anchors"],
      [["verify", at("x.json"), "--anchors", anchors, "--request", "-", "--response", "-"], "--request and --response"],
      [["sign", "--key", key, "--command", "-", "--response", "-", "--issuer", ISSUER, "--audience", AUDIENCE], "--command and --response"],
      [["sign", "--key", "-", "--command", "-", "--issuer", ISSUER, "--audience", AUDIENCE], "--key and --command"],
      [["manifest", "verify", "-", "--anchors", "-"], "the manifest file and --anchors"],
    ];
    for (const [argv, both] of cases) {
      const res = await run(...argv);
      expect({ argv, code: res.code, out: res.out, err: res.err }).toEqual({ argv, code: 2, out: "", err: `countersign ${argv[0]}: standard input (-) is read once: ${both} cannot both be -\n` });
    }
  });

  it("--help after -- is a file's name, not the usage (review rv-109)", async () => {
    const res = await run("verify", "--anchors", at("none.json"), "--", "--help");
    expect([res.code, res.out]).toEqual([2, ""]);
    expect(res.err).toMatch(/cannot read (input|anchors file)/);
    expect((await run("verify", "--help")).code).toBe(0);
  });

  it("replay --out - is a usage error, where it wrote a file named - and nothing on stdout", async () => {
    const bundle = resolve(ROOT, "vectors/ec-agent/bundle.json");
    const existed = existsSync("-");
    try {
      const res = await run("replay", bundle, "--out", "-");
      expect([res.code, res.out]).toEqual([2, ""]);
      expect(res.err).toMatch(/--out - would write a file named -/);
      expect(existsSync("-")).toBe(existed);
    } finally {
      if (!existed) rmSync("-", { force: true });
    }
  });
});

describe("an output path that cannot be written is a usage error: one line naming it, exit 2, nothing half-written", () => {
  const bundle = resolve(ROOT, "vectors/ec-agent/bundle.json");
  const missing = join(dir, "no-such-dir", "x.json");
  const noTemp = (d: string) => expect(readdirSync(d).filter((f) => f.endsWith(".tmp"))).toEqual([]);

  it("keygen --out into a missing directory", async () => {
    const res = await run("keygen", "--out", join(dir, "no-such-dir", "k"));
    expect(res.code).toBe(2);
    expect(res.err).toBe(`countersign keygen: cannot write ${join(dir, "no-such-dir", "k.key")}: ENOENT\n`);
    expect(existsSync(join(dir, "no-such-dir"))).toBe(false);
  });

  it("keygen --out naming a directory (., .., keys/) is a usage error, not hidden files .key and .pub.json inside it", async () => {
    const sub = join(dir, "keygen-dir");
    mkdirSync(sub, { recursive: true });
    for (const out of [`${sub}/`, `${sub}/.`, `${sub}/..`, join(sub, "x") + "/.."]) {
      const res = await run("keygen", "--out", out, "--force");
      expect({ out, code: res.code }).toEqual({ out, code: 2 });
      expect(res.err).toMatch(/--out must name a file prefix, not the directory/);
    }
    expect(readdirSync(sub)).toEqual([]);
    expect(readdirSync(dir).filter((f) => f.startsWith("."))).toEqual([]);
    // A prefix beside a directory of the same name stays a prefix.
    expect((await run("keygen", "--out", sub, "--json")).code).toBe(0);
    expect(existsSync(`${sub}.key`)).toBe(true);
  });

  it("sign --command with an intake Command (intake_version beside the request) is refused by name, saying what sign takes", async () => {
    const { key } = await issuerFiles("iv");
    writeFileSync(at("iv-command.json"), JSON.stringify({ ...COMMAND, intake_version: "1.3" }));
    const res = await run("sign", "--key", key, "--command", at("iv-command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call");
    expect({ code: res.code, out: res.out }).toEqual({ code: 2, out: "" });
    expect(res.err).toMatch(/unknown field "intake_version" \(intake_version is sent to POST \/v1\/intake, never signed; sign takes the request/);
  });

  it("keygen --force without --issuer never leaves the old key's anchor beside the new key", async () => {
    expect((await run("keygen", "--out", at("stale"), "--kid", "k1", "--issuer", ISSUER)).code).toBe(0);
    const [oldKey, oldAnchor] = [readFileSync(at("stale.key"), "utf8"), readFileSync(at("stale.anchor.json"), "utf8")];
    const res = await run("keygen", "--out", at("stale"), "--kid", "k1", "--force", "--json");
    expect({ code: res.code, out: res.out }).toEqual({ code: 2, out: "" });
    expect(res.err).toMatch(/stale\.anchor\.json exists and would no longer match the new key/);
    expect([readFileSync(at("stale.key"), "utf8"), readFileSync(at("stale.anchor.json"), "utf8")]).toEqual([oldKey, oldAnchor]);
    // With --issuer the anchor is rewritten with the new key.
    expect((await run("keygen", "--out", at("stale"), "--kid", "k1", "--issuer", ISSUER, "--force")).code).toBe(0);
    const pub = JSON.parse(readFileSync(at("stale.pub.json"), "utf8"));
    expect(JSON.parse(readFileSync(at("stale.anchor.json"), "utf8")).keys[0].public_key).toBe(pub.public_key);
  });

  it("keygen --force over a file that cannot be replaced keeps the old key (no lone new key beside an old public key)", async () => {
    expect((await run("keygen", "--out", at("half"), "--kid", "k1")).code).toBe(0);
    const oldKey = readFileSync(at("half.key"), "utf8");
    rmSync(at("half.pub.json"));
    mkdirSync(at("half.pub.json"));
    const res = await run("keygen", "--out", at("half"), "--kid", "k1", "--force");
    expect(res.code).toBe(2);
    expect(res.err).toBe(`countersign keygen: cannot write ${at("half.pub.json")}: it is a directory\n`);
    expect(readFileSync(at("half.key"), "utf8")).toBe(oldKey);
    noTemp(dir);
  });

  it("keygen writes files whose names are long but within the file-name limit (255 bytes), and leaves no temporary file", async () => {
    // 246 + ".pub.json" = 255 bytes: legal names, for which a temporary name grown from them would not be.
    const prefix = at("n".repeat(246));
    const res = await run("keygen", "--out", prefix, "--kid", "k1", "--json");
    expect([res.code, res.err]).toEqual([0, ""]);
    expect(JSON.parse(readFileSync(`${prefix}.pub.json`, "utf8")).kid).toBe("k1");
    expect(statSync(`${prefix}.key`).mode & 0o777).toBe(0o600);
    noTemp(dir);
  });

  it("replay --out into a missing directory, or onto a directory, or empty", async () => {
    const res = await run("replay", bundle, "--out", missing);
    expect(res).toEqual({ code: 2, out: "", err: `countersign replay: cannot write ${missing}: ENOENT\n` });
    mkdirSync(at("report-dir"));
    const onDir = await run("replay", bundle, "--out", at("report-dir"));
    expect(onDir.code).toBe(2);
    expect(onDir.err).toMatch(/cannot write .*report-dir: it is a directory/);
    const empty = await run("replay", bundle, "--out", "");
    expect(empty.code).toBe(2);
    expect(empty.out).toBe("");
    noTemp(dir);
    const written = await run("replay", bundle, "--out", at("report.json"));
    expect(written.code).toBe(0);
    expect(written.out).toBe("");
    expect(JSON.parse(readFileSync(at("report.json"), "utf8"))).toMatchObject({ decision: "match" });
    noTemp(dir);
  });

  it("npm run replay (cli/replay.ts) --out into a missing directory: one line, exit 2, no stack trace", () => {
    const tsx = resolve(ROOT, "node_modules/tsx/dist/cli.mjs");
    const res = spawnSync(process.execPath, [tsx, "cli/replay.ts", bundle, "--out", missing], { cwd: ROOT, encoding: "utf8" });
    expect(res.status).toBe(2);
    expect(res.stdout).toBe("");
    expect(res.stderr).toBe(`cannot write ${missing}: ENOENT\n`);
  });

  it("npm run demo (cli/demo.ts) into a missing directory: one line, exit 2, no stack trace", () => {
    const tsx = resolve(ROOT, "node_modules/tsx/dist/cli.mjs");
    const res = spawnSync(process.execPath, [tsx, "cli/demo.ts", missing], { cwd: ROOT, encoding: "utf8" });
    expect({ status: res.status, stdout: res.stdout, stderr: res.stderr }).toEqual({ status: 2, stdout: "", stderr: `cannot write ${missing}: ENOENT\n` });
  });

  it("npm run demo's curl line reaches the instance the tour names (COUNTERSIGN_URL, else PORT, else 8787) and says a refused connection", () => {
    const tsx = resolve(ROOT, "node_modules/tsx/dist/cli.mjs");
    const res = spawnSync(process.execPath, [tsx, "cli/demo.ts", at("demo-line.json")], { cwd: ROOT, encoding: "utf8" });
    expect(res.status, res.stderr).toBe(0);
    const line = res.stdout.split("\n")[1].trim();
    expect(line).toMatch(/^curl -sS /); // -s alone printed nothing at all for a refused connection (rv-83)
    // The shell's own expansion of the printed line, with echo in curl's place.
    const url = (env: Record<string, string>) =>
      spawnSync("bash", ["-c", line.replace(/^curl/, "echo")], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", DEMO_RP_TOKEN: "t", ...env } }).stdout.split(" ").find((w) => w.includes("/v1/receipts/verify"));
    expect(url({ COUNTERSIGN_URL: "http://127.0.0.1:8983" })).toBe("http://127.0.0.1:8983/v1/receipts/verify");
    expect(url({ PORT: "9000" })).toBe("http://127.0.0.1:9000/v1/receipts/verify");
    expect(url({})).toBe("http://127.0.0.1:8787/v1/receipts/verify");
  });

  it("replay --out naming the bundle itself is refused (exit 2, the bundle left as it was), for countersign replay and npm run replay", async () => {
    writeFileSync(at("own-bundle.json"), readFileSync(bundle));
    const res = await run("replay", at("own-bundle.json"), "--out", join(dir, ".", "own-bundle.json"), "--json");
    expect({ code: res.code, out: res.out }).toEqual({ code: 2, out: "" });
    expect(res.err).toMatch(/cannot write .*own-bundle\.json: it is the input .*own-bundle\.json, which the report would replace\n$/);
    const tsx = resolve(ROOT, "node_modules/tsx/dist/cli.mjs");
    const npm = spawnSync(process.execPath, [tsx, "cli/replay.ts", at("own-bundle.json"), "--out", at("own-bundle.json")], { cwd: ROOT, encoding: "utf8" });
    expect({ status: npm.status, stdout: npm.stdout }).toEqual({ status: 2, stdout: "" });
    expect(readFileSync(at("own-bundle.json"), "utf8")).toBe(readFileSync(bundle, "utf8"));
    noTemp(dir);
  });

  it("the countersign process itself: keygen into a missing directory exits 2 with one line", () => {
    const res = spawnSync(process.execPath, [resolve(ROOT, "cli/bin.mjs"), "keygen", "--out", join(dir, "no-such-dir", "k")], { encoding: "utf8" });
    expect(res.status).toBe(2);
    expect(res.stderr.trim().split("\n")).toEqual([`countersign keygen: cannot write ${join(dir, "no-such-dir", "k.key")}: ENOENT`]);
  });
});

describe("countersign sign and verify", () => {
  it("a signed receipt verifies offline (exit 0, the service's JSON); a tampered one is invalid (exit 1) with the service's code", async () => {
    const { key, anchors } = await issuerFiles("sv");
    const signed = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--json");
    expect(signed.code).toBe(0);
    const receipt = JSON.parse(signed.out);
    expect(Object.keys(receipt)).toHaveLength(22);
    writeFileSync(at("receipt.json"), JSON.stringify(receipt));
    const ok = await run("verify", at("receipt.json"), "--anchors", anchors, "--request", at("command.json"), "--json");
    expect(ok.code).toBe(0);
    expect(ok.err).toBe("");
    expect(JSON.parse(ok.out)).toMatchObject({ valid: true, decision: "audit", failures: [], issuer: ISSUER, kid: "k1" });
    writeFileSync(at("tampered.json"), JSON.stringify({ ...receipt, timestamp: receipt.timestamp + 1 }));
    const bad = await run("verify", at("tampered.json"), "--anchors", anchors);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out).failures.map((f: { code: string }) => f.code)).toContain("SIGNATURE_INVALID");
    expect(bad.err).toMatch(/INVALID/);
  });

  it("a Command whose timestamp is RFC 3339 text (as intake takes it) is refused by sign with what to give instead, Unix seconds", async () => {
    const { key } = await issuerFiles("rfc");
    writeFileSync(at("command-rfc3339.json"), JSON.stringify({ ...COMMAND, timestamp: "2026-12-01T04:00:00Z" }));
    const res = await run("sign", "--key", key, "--command", at("command-rfc3339.json"), "--issuer", ISSUER, "--audience", AUDIENCE);
    expect(res.code).toBe(2);
    expect(res.out).toBe("");
    expect(res.err).toMatch(/the Command\.timestamp must be a number of Unix seconds \(intake converts a Command's RFC 3339 text/);
  });

  it("a call body in enforce mode is accepted once; the same call twice in one --lines file is a replay", async () => {
    const { key, anchors } = await issuerFiles("enf");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    const body = JSON.parse(call.out);
    writeFileSync(at("call.json"), JSON.stringify(body));
    const once = await run("verify", at("call.json"), "--anchors", anchors, "--mode", "enforce", "--json");
    expect(JSON.parse(once.out)).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
    writeFileSync(at("twice.jsonl"), `${JSON.stringify(body)}\n${JSON.stringify(body)}\n`);
    const twice = await run("verify", "--lines", at("twice.jsonl"), "--anchors", anchors, "--json");
    expect(twice.code).toBe(1);
    const answers = twice.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(answers.map((a) => a.decision)).toEqual(["accept", "reject"]);
    expect(answers[1].failures[0].code).toBe("REPLAY_DETECTED");
  });

  it("a trust file member of another name (revoke for revoked) is refused, exit 2, never ignored with the key left trusted", async () => {
    const { key, pub } = await issuerFiles("tfm");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    writeFileSync(at("tfm-call.json"), call.out);
    const revocation = [{ issuer: ISSUER, kid: "k1" }];
    writeFileSync(at("tfm-revoked.json"), JSON.stringify({ anchors: [{ issuer: ISSUER, keys: [pub] }], revoked: revocation }));
    const revoked = await run("verify", at("tfm-call.json"), "--anchors", at("tfm-revoked.json"), "--json");
    expect({ code: revoked.code, codes: JSON.parse(revoked.out).failures.map((f: { code: string }) => f.code) }).toEqual({ code: 1, codes: ["ANCHOR_REVOKED"] });
    writeFileSync(at("tfm-typo.json"), JSON.stringify({ anchors: [{ issuer: ISSUER, keys: [pub] }], revoke: revocation }));
    for (const argv of [["verify", at("tfm-call.json")], ["manifest", "verify", at("tfm-call.json")]]) {
      const typo = await run(...argv, "--anchors", at("tfm-typo.json"), "--json");
      expect({ code: typo.code, out: typo.out }).toEqual({ code: 2, out: "" });
      expect(typo.err).toMatch(/anchors file: unknown member "revoke" \(a trust file has anchors, revoked, manifests\)/);
    }
  });

  it("a revoked entry out of form ({issuer, kidd}) is refused by manifest verify as by verify, exit 2, never skipped", async () => {
    const { key, pub } = await issuerFiles("rvf");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    writeFileSync(at("rvf-call.json"), call.out);
    const anchors = [{ issuer: ISSUER, keys: [pub] }];
    for (const entry of [{ issuer: ISSUER, kidd: "k1" }, { issuer: ISSUER }, { issuer: ISSUER, kid: "k1", fingerprint: pub.fingerprint }, { issuer: ISSUER, kid: 1 }]) {
      writeFileSync(at("rvf-anchors.json"), JSON.stringify({ anchors, revoked: [entry] }));
      for (const argv of [["verify", at("rvf-call.json")], ["manifest", "verify", at("rvf-call.json")]]) {
        const res = await run(...argv, "--anchors", at("rvf-anchors.json"), "--json");
        expect({ argv, entry, code: res.code, out: res.out }).toEqual({ argv, entry, code: 2, out: "" });
        expect(res.err).toMatch(/anchors file: each revoked entry must be \{issuer, kid\} or \{issuer, fingerprint\}/);
      }
    }
  });

  it("a reader that closes stdout early (| head -1) leaves the exit code as judged: no EPIPE stack trace, no exit 1 for valid calls", async () => {
    const { key, anchors } = await issuerFiles("epipe");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--lifetime", "300", "--json");
    // Audit mode: the same call again is judged again, valid, so every line is valid; the
    // answers (about 0.5 MB) outgrow the pipe's buffer.
    const line = JSON.stringify({ ...JSON.parse(call.out), mode: "audit" });
    writeFileSync(at("epipe.jsonl"), `${line}\n`.repeat(1000));
    const child = spawn(process.execPath, [resolve(ROOT, "cli/bin.mjs"), "verify", "--lines", at("epipe.jsonl"), "--anchors", anchors, "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => void (stderr += d));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((done) => child.on("close", (c) => done(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  }, 60_000);

  it("relying-parties rotate whose standard output is closed before its answer fails (exit 1): the token it was shown once is lost, the old one already refused", async () => {
    const server = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "rp1", token: "t".repeat(40), audiences: [AUDIENCE] })));
    await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
    try {
      const { port } = server.address() as { port: number };
      const child = spawn(process.execPath, [resolve(ROOT, "cli/bin.mjs"), "relying-parties", "rotate", "rp1", "--url", `http://127.0.0.1:${port}`, "--admin-token", "adm", "--json"], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.destroy();
      let stderr = "";
      child.stderr.on("data", (d) => void (stderr += d));
      const code = await new Promise<number | null>((done) => child.on("close", (c) => done(c)));
      expect(code).toBe(1);
      expect(stderr).toMatch(/could not be written \(standard output was closed\)/);
    } finally {
      server.close();
    }
  }, 60_000);

  it("a call body that names no audience is refused as the service refuses it (MALFORMED_REQUEST), not completed from its receipt; a bare receipt still speaks for its own", async () => {
    const { key, anchors } = await issuerFiles("noaud");
    const call = JSON.parse((await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json")).out);
    const { audience: _named, ...unnamed } = call;
    writeFileSync(at("noaud-call.json"), JSON.stringify(unnamed));
    const res = await run("verify", at("noaud-call.json"), "--anchors", anchors, "--mode", "enforce", "--json");
    expect({ code: res.code, codes: JSON.parse(res.out).failures.map((f: { code: string }) => f.code) }).toEqual({ code: 1, codes: ["MALFORMED_REQUEST"] });
    expect(JSON.parse(res.out).failures[0].detail).toMatch(/^audience/);
    const named = await run("verify", at("noaud-call.json"), "--anchors", anchors, "--mode", "enforce", "--audience", AUDIENCE, "--json");
    expect({ code: named.code, decision: JSON.parse(named.out).decision }).toEqual({ code: 0, decision: "accept" });
    writeFileSync(at("noaud-bare.json"), JSON.stringify(call.receipt));
    const bare = await run("verify", at("noaud-bare.json"), "--anchors", anchors, "--json");
    expect({ code: bare.code, valid: JSON.parse(bare.out).valid }).toEqual({ code: 0, valid: true });
  });

  it("a call for an audience no party can be registered for (http://) is AUDIENCE_NOT_ALLOWED alone as in --lines, as the service answers it", async () => {
    const { key, anchors } = await issuerFiles("httpaud");
    const call = JSON.parse((await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json")).out);
    const body = { ...call, audience: "http://relying-party.example", mode: "audit" };
    writeFileSync(at("httpaud.json"), JSON.stringify(body));
    writeFileSync(at("httpaud.jsonl"), JSON.stringify(body) + "\n");
    const alone = await run("verify", at("httpaud.json"), "--anchors", anchors, "--json");
    const line = await run("verify", "--lines", at("httpaud.jsonl"), "--anchors", anchors, "--json");
    const codes = (out: string) => JSON.parse(out).failures.map((f: { code: string }) => f.code);
    expect({ alone: codes(alone.out), line: codes(line.out) }).toEqual({ alone: ["AUDIENCE_NOT_ALLOWED"], line: ["AUDIENCE_NOT_ALLOWED"] });
    expect(alone.code).toBe(1);
  });

  it("a value option given twice is a usage error, exit 2, not its last value alone; a repeatable one (--audience) still repeats", async () => {
    const { key, anchors } = await issuerFiles("twice");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    writeFileSync(at("twice-call.json"), call.out);
    for (const argv of [
      ["verify", at("twice-call.json"), "--anchors", anchors, "--mode", "enforce", "--mode", "audit"],
      ["verify", at("twice-call.json"), "--anchors", at("no-such.json"), "--anchors", anchors],
      ["sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--audience=https://other.example"],
    ]) {
      const res = await run(...argv, "--json");
      expect({ argv, code: res.code, out: res.out }).toEqual({ argv, code: 2, out: "" });
      expect(res.err).toMatch(/ is given more than once\n$/);
    }
    let sent: unknown;
    const io: Io = { out: () => {}, err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: (async (_url: string, init: RequestInit) => ((sent = JSON.parse(String(init.body))), new Response("{}", { status: 201 }))) as unknown as typeof fetch };
    expect(await main(["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--audience", "https://second-party.example", "--url", "http://127.0.0.1:9", "--json", "--json"], io)).toBe(0);
    expect(sent).toMatchObject({ audiences: [AUDIENCE, "https://second-party.example"] });
  });

  it("--lines speaks for more audiences than one party holds (16): each call is judged for its own, no usage error for the file", async () => {
    const { key, anchors } = await issuerFiles("manyaud");
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) {
      const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", `https://party-${i}.example`, "--sequence", String(i), "--call", "--json");
      lines.push(call.out.trim());
    }
    writeFileSync(at("manyaud.jsonl"), lines.join("\n") + "\n");
    const res = await run("verify", "--lines", at("manyaud.jsonl"), "--anchors", anchors, "--json");
    expect({ code: res.code, err: res.err }).toEqual({ code: 0, err: "" });
    const answers = res.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(answers.map((a) => [a.status, a.decision])).toEqual(lines.map(() => [200, "accept"]));
    // A call whose audience is not its receipt's is still a mismatch, whichever party it is sent as.
    writeFileSync(at("manyaud-swap.jsonl"), [...lines.slice(1), JSON.stringify({ ...JSON.parse(lines[0]), audience: "https://party-19.example" })].join("\n") + "\n");
    const swapped = (await run("verify", "--lines", at("manyaud-swap.jsonl"), "--anchors", anchors, "--json")).out.trim().split("\n").map((l) => JSON.parse(l));
    expect(swapped.at(-1).failures.map((f: { code: string }) => f.code)).toEqual(["AUDIENCE_MISMATCH"]);
  });

  it("receipts signed one after another without --sequence never share a sequence: the service would refuse the second as a replay", async () => {
    const { key, anchors } = await issuerFiles("seqdef");
    const lines: string[] = [];
    for (let i = 0; i < 30; i++) lines.push((await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json")).out.trim());
    const sequences = lines.map((l) => JSON.parse(l).receipt.sequence as number);
    expect(new Set(sequences).size).toBe(sequences.length);
    expect(sequences.every((q, i) => Number.isSafeInteger(q) && (i === 0 || q > sequences[i - 1]))).toBe(true);
    writeFileSync(at("seqdef.jsonl"), lines.join("\n") + "\n");
    const res = await run("verify", "--lines", at("seqdef.jsonl"), "--anchors", anchors, "--json");
    expect(res.out.trim().split("\n").map((l) => JSON.parse(l).decision)).toEqual(lines.map(() => "accept"));
    expect(res.code).toBe(0);
  });

  it("sign --call never emits a call body over the verification route's cap (the service answers it 413 whole); the receipt alone is still signed", async () => {
    const { key, anchors } = await issuerFiles("bigcall");
    writeFileSync(at("bigcall-command.json"), JSON.stringify({ ...COMMAND, params: { pad: "x".repeat(270_000) } }));
    const args = ["sign", "--key", key, "--command", at("bigcall-command.json"), "--issuer", ISSUER, "--audience", AUDIENCE];
    for (const json of [["--json"], []]) {
      const res = await run(...args, "--call", ...json);
      expect({ code: res.code, out: res.out }).toEqual({ code: 2, out: "" });
      expect(res.err).toMatch(/the call body would be \d+ bytes; POST \/v1\/receipts\/verify takes at most 262144 \(413 REQUEST_TOO_LARGE\)/);
    }
    const bare = await run(...args, "--json");
    expect(bare.code).toBe(0);
    // What was refused is what the service refuses.
    writeFileSync(at("bigcall-call.json"), JSON.stringify({ receipt: JSON.parse(bare.out), audience: AUDIENCE, request: JSON.parse(readFileSync(at("bigcall-command.json"), "utf8")) }));
    const offline = await run("verify", at("bigcall-call.json"), "--anchors", anchors, "--json");
    expect(JSON.parse(offline.out).failures.map((f: { code: string }) => f.code)).toEqual(["REQUEST_TOO_LARGE"]);
  });

  it("--lines of a file with no call (empty, or blank lines only) is a usage error, exit 2, not exit 0 for 'every call valid'", async () => {
    const { anchors } = await issuerFiles("nolines");
    for (const text of ["", "\n \n\t\r\n"]) {
      writeFileSync(at("none.jsonl"), text);
      const res = await run("verify", "--lines", at("none.jsonl"), "--anchors", anchors, "--json");
      expect(res).toEqual({ code: 2, out: "", err: `countersign verify: ${at("none.jsonl")} holds no calls (one verification call body a line)\n` });
    }
  });

  it("--lines reads each call's audience as JSON, whatever its spacing: a line with a space after a colon is judged like the same call alone", async () => {
    const { key, anchors } = await issuerFiles("spaced");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    const body = JSON.parse(call.out);
    // One line, as JSON.stringify with an indent and the line breaks folded, or Python's json.dumps, writes it.
    writeFileSync(at("spaced.jsonl"), JSON.stringify(body, null, 1).replace(/\n\s*/g, " ") + "\n");
    const spaced = await run("verify", "--lines", at("spaced.jsonl"), "--anchors", anchors, "--json");
    expect(JSON.parse(spaced.out)).toMatchObject({ status: 200, valid: true, decision: "accept" });
    expect(spaced.code).toBe(0);
    // A call whose audience is not its receipt's is an audience mismatch, as alone, not a party refused for the call's audience.
    writeFileSync(at("other.jsonl"), JSON.stringify({ ...body, audience: "https://other-party.example" }) + "\n");
    writeFileSync(at("other.json"), JSON.stringify({ ...body, audience: "https://other-party.example" }));
    const alone = await run("verify", at("other.json"), "--anchors", anchors, "--mode", "enforce", "--json");
    const line = await run("verify", "--lines", at("other.jsonl"), "--anchors", anchors, "--json");
    expect(JSON.parse(alone.out).failures.map((f: { code: string }) => f.code)).toEqual(["AUDIENCE_MISMATCH"]);
    const { status, ...answer } = JSON.parse(line.out);
    expect({ status, codes: answer.failures.map((f: { code: string }) => f.code) }).toEqual({ status: 200, codes: ["AUDIENCE_MISMATCH"] });
  });

  it("sign refuses, exit 2 with a message naming the flag, every flag value that would make a receipt the verifier refuses; the bounds themselves verify", async () => {
    const { key, anchors } = await issuerFiles("flags");
    const base = ["sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--json"];
    const refused: [string[], RegExp][] = [
      [["--issuer", "notauri"], /--issuer must be an https:\/\/ URI/],
      [["--issuer", "https://"], /--issuer must be an https:\/\/ URI/],
      [["--issuer", `https://x.example/${"a".repeat(300)}`], /--issuer must be an https:\/\/ URI/],
      [["--audience", "http://relying-party.example"], /--audience must be an https:\/\/ URI/],
      [["--sequence", "1.5"], /--sequence must be an integer/],
      [["--sequence=1e300"], /--sequence must be an integer/],
      [["--sequence=-1"], /--sequence must be an integer/],
      [["--sequence", "9007199254740992"], /--sequence must be an integer/],
      [["--lifetime=-5"], /--lifetime must be above 0 and at most 300/],
      [["--lifetime=0"], /--lifetime must be above 0/],
      [["--lifetime=100000"], /--lifetime must be above 0 and at most 300/],
      [["--lifetime=1e-300"], /--lifetime must be above 0/],
      [["--skew=-1"], /--skew must be a number of seconds >= 0/],
      // Number() reads these as 16, 1, 7 and 8: a typo would have signed a skew or lifetime nobody wrote.
      [["--skew", "0x10"], /--skew must be a decimal number/],
      [["--skew", "0b1"], /--skew must be a decimal number/],
      [["--lifetime", " 7 "], /--lifetime must be a decimal number/],
      [["--lifetime", "0o10"], /--lifetime must be a decimal number/],
      [["--skew", "Infinity"], /--skew must be a decimal number/],
      // Serialised as 10000000000000000 or 1e+308: an integer strict JSON refuses, so the service would refuse the receipt.
      [["--skew", "1e16"], /--skew must be at most 2\^53-1/],
      [["--skew", "1e308"], /--skew must be at most 2\^53-1/],
      [["--verdict", "deny", "--block-reason="], /--block-reason must not be empty/],
      [["--block-reason", "why"], /--block-reason is for a deny or escalate verdict/],
    ];
    // A case's flag replaces base's of that name (a value option may be given once).
    const withFlags = (flags: string[]) => {
      const names = new Set(flags.filter((f) => f.startsWith("--")).map((f) => f.split("=")[0]));
      const kept: string[] = [];
      for (let i = 0; i < base.length; i++) {
        if (names.has(base[i]) && base[i] !== "--json") i++;
        else kept.push(base[i]);
      }
      return [...kept, ...flags];
    };
    for (const [flags, message] of refused) {
      const res = await run(...withFlags(flags));
      expect({ flags, code: res.code, out: res.out }).toEqual({ flags, code: 2, out: "" });
      expect(res.err).toMatch(message);
    }
    for (const flags of [["--lifetime", "1e2", "--skew", "2.5"], ["--lifetime", "300", "--sequence", "0"], ["--sequence", "9007199254740991", "--skew", "0"], ["--verdict", "deny", "--block-reason", "no"]]) {
      const signed = await run(...base, ...flags);
      expect(signed.code).toBe(0);
      writeFileSync(at("flags-receipt.json"), signed.out);
      const ok = await run("verify", at("flags-receipt.json"), "--anchors", anchors, "--request", at("command.json"), "--json");
      expect({ flags, valid: JSON.parse(ok.out).valid }).toEqual({ flags, valid: true });
    }
  });

  it("verify: a flag value the service would refuse, or a flag the call at hand does not carry, is a usage error (exit 2), not a verdict", async () => {
    const { key, anchors } = await issuerFiles("vflags");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    writeFileSync(at("vflags-call.json"), call.out);
    writeFileSync(at("vflags.jsonl"), call.out);
    writeFileSync(at("vflags-chain.json"), JSON.stringify({ chain: { chain_id: "c", entries: [] } }));
    const { request: _request, ...unbound } = JSON.parse(call.out);
    writeFileSync(at("vflags-bare.json"), JSON.stringify(unbound.receipt));
    writeFileSync(at("vflags-norequest-call.json"), JSON.stringify(unbound));
    const cases: [string[], RegExp][] = [
      // Enforce mode of this command's making (a bare receipt, --mode enforce) with no --request: the flag is missing, not the evidence invalid.
      [[at("vflags-bare.json"), "--mode", "enforce"], /--mode enforce judges a receipt against the request it was issued for: give it with --request FILE/],
      [[at("vflags-norequest-call.json"), "--mode", "enforce"], /give it with --request FILE/],
      [[at("vflags-call.json"), "--mode", "bogus"], /--mode must be audit or enforce/],
      [[at("vflags-call.json"), "--audience", "notauri"], /--audience must be an https:\/\/ URI/],
      [[at("vflags-call.json"), "--org-id", "notauri"], /--org-id must be an https:\/\/ URI/],
      [[at("vflags-call.json"), "--mode", "enforce", "--at", "1796000000"], /--at judges only an audit-mode call/],
      [[at("vflags-call.json"), "--at", "1e20"], /--at must be at most 2\^53-1/],
      [[at("vflags-call.json"), "--seal", at("command.json")], /--seal does not apply to a receipt/],
      [[at("vflags-call.json"), "--no-freshness"], /--no-freshness does not apply to a receipt/],
      [[at("vflags-chain.json"), "--request", at("command.json")], /--request does not apply to a chain/],
      [[at("vflags-chain.json"), "--at", "1796000000"], /--at judges a chain only with --no-freshness/],
      [["--lines", at("vflags.jsonl"), "--mode", "enforce"], /--mode does not apply to --lines/],
      // Each line is judged for the audience it names: an --audience beside them would check nothing.
      [["--lines", at("vflags.jsonl"), "--audience", "https://me.example"], /--audience does not apply to --lines/],
    ];
    for (const [argv, message] of cases) {
      const res = await run("verify", ...argv, "--anchors", anchors, "--json");
      expect({ argv, code: res.code, out: res.out }).toEqual({ argv, code: 2, out: "" });
      expect(res.err).toMatch(message);
    }
    const bin = spawnSync(process.execPath, [resolve(ROOT, "cli/bin.mjs"), "verify", at("vflags-call.json"), "--anchors", anchors, "--mode", "bogus"], { encoding: "utf8" });
    expect(bin.status).toBe(2);
    expect(bin.stdout).toBe("");
    expect(bin.stderr).toBe("countersign verify: --mode must be audit or enforce\n");
  });

  it("keygen, manifest verify and the remote commands refuse bad flag values with exit 2 before anything is written or sent", async () => {
    const { anchors } = await issuerFiles("rflags");
    let fetched = 0;
    const io: Io = { out: () => {}, err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: (async () => (fetched++, new Response("{}"))) as typeof fetch };
    const url = ["--url", "http://127.0.0.1:9"];
    const cases: [string[], RegExp][] = [
      [["keygen", "--out", at("rflags-k"), "--issuer", `https://x.example/${"a".repeat(300)}`], /--issuer must be an https:\/\/ URI/],
      [["manifest", "verify", at("command.json"), "--anchors", anchors, "--skew=-1"], /--skew must be/],
      [["anchors", "revoke", "--issuer", "notauri", "--kid", "k1", ...url], /--issuer must be an https:\/\/ URI/],
      [["anchors", "revoke", "--issuer", ISSUER, "--fingerprint", "ABC", ...url], /--fingerprint must be 64 lowercase hex/],
      [["anchors", "revoke", "--issuer", ISSUER, "--kid", "", ...url], /--kid must not be empty/],
      [["anchors", "show", "notauri", ...url], /the issuer must be an https:\/\/ URI/],
      [["anchors", "pin", at("rflags.pub.json"), ...url], /rflags\.pub\.json is one key entry \(keygen's PREFIX\.pub\.json\), not an anchor: pin PREFIX\.anchor\.json/],
      [["relying-parties", "add", "rp1", "--audience", "notauri", ...url], /--audience must be an https:\/\/ URI/],
      [["relying-parties", "add", "rp 1", "--audience", AUDIENCE, ...url], /name must be 1-64/],
      [["relying-parties", "add", "..", "--audience", AUDIENCE, ...url], /not \. or \.\./],
      [["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--audience", AUDIENCE, ...url], /one audience twice/],
      [["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--token", "", ...url], /--token must be 32-256/],
      [["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--url", "notaurl"], /--url must be an http:\/\/ or https:\/\/ URL/],
      [["relying-parties", "rotate", "rp 1", ...url], /name must be 1-64/],
      [["relying-parties", "rotate", "rp1", "--token", "short", ...url], /--token must be 32-256/],
      [["relying-parties", "rotate", "rp1", "--audience", AUDIENCE, ...url], /Unknown option '--audience'/],
      [["anchors", "show", ISSUER, "--url", "ftp://127.0.0.1"], /--url must be an http:\/\/ or https:\/\/ URL/],
      [["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9?x=1"], /--url must not carry a query or a fragment/],
      [["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9/#top"], /--url must not carry a query or a fragment/],
      [["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9?"], /--url must not carry a query or a fragment/],
      [["anchors", "show", ISSUER, "--url", "http://user:pw@127.0.0.1:9"], /--url must not carry credentials/],
      [["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9 "], /--url must not contain spaces or control characters/],
      [["relying-parties", "rotate", "rp1", "--url", "http://127.0.0.1:9/ "], /--url must not contain spaces or control characters/],
      [["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9\n"], /--url must not contain spaces or control characters/],
      [["anchors", "show", ISSUER, "--admin-token", "tok\nen", ...url], /--admin-token must be printable ASCII/],
      [["anchors", "show", ISSUER, "--admin-token", "tök€n", ...url], /--admin-token must be printable ASCII/],
      [["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--admin-token", "token ", ...url], /--admin-token must be printable ASCII/],
      [["anchors", "show", ISSUER, "--timeout", "1e300", ...url], /--timeout must be above 0 and at most 4294967295/],
      [["anchors", "show", ISSUER, "--timeout", "0.5", ...url], /--timeout must be above 0 and at most 4294967295 milliseconds, a whole number/],
      [["anchors", "show", ISSUER, "--timeout", "1500.25", ...url], /--timeout must be above 0 and at most 4294967295 milliseconds, a whole number/],
    ];
    for (const [argv, message] of cases) {
      let err = "";
      const code = await main(argv, { ...io, err: (t) => void (err += t) });
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(err).toMatch(message);
    }
    expect(fetched).toBe(0);
    expect(existsSync(at("rflags-k.key"))).toBe(false);
    let err = "";
    expect(await main(["anchors", "show", ISSUER], { ...io, env: { COUNTERSIGN_URL: "localhost:8787" }, err: (t) => void (err += t) })).toBe(2);
    expect(err).toMatch(/COUNTERSIGN_URL must be an http:\/\/ or https:\/\/ URL/);
    err = "";
    expect(await main(["anchors", "show", ISSUER], { ...io, env: { COUNTERSIGN_URL: "http://127.0.0.1:9/?v=1" }, err: (t) => void (err += t) })).toBe(2);
    expect(err).toMatch(/COUNTERSIGN_URL must not carry a query or a fragment/);
    err = "";
    expect(await main(["anchors", "show", ISSUER], { ...io, env: { COUNTERSIGN_URL: "http://127.0.0.1:9\t" }, err: (t) => void (err += t) })).toBe(2);
    expect(err).toMatch(/COUNTERSIGN_URL must not contain spaces or control characters/);
    expect(fetched).toBe(0);
  });

  it("a remote command refuses an http:// URL that is not loopback when a token would cross it, unless --insecure-http (review rv-73)", async () => {
    // Before: the admin token went in clear to any http:// host (exit 1 VERIFIER_UNAVAILABLE for one that did not answer, after sending).
    const sent: { url: string; auth: string | null }[] = [];
    const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
      sent.push({ url: String(input), auth: new Headers(init?.headers).get("authorization") });
      return Response.json({ ok: true });
    }) as unknown as typeof fetch;
    const io: Io = { out: () => {}, err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: fetcher };
    const refused: [string[], Record<string, string>, RegExp][] = [
      [["anchors", "show", ISSUER, "--url", "http://countersign.internal.example:8787", "--admin-token", "adm"], {}, /--url is http:\/\/ to countersign\.internal\.example, not loopback: the admin token would cross the network in clear; use https:\/\/, or pass --insecure-http/],
      [["anchors", "revoke", "--issuer", ISSUER, "--kid", "k1", "--url", "http://10.0.0.5"], { COUNTERSIGN_ADMIN_TOKEN: "adm" }, /--url is http:\/\/ to 10\.0\.0\.5, not loopback/],
      [["relying-parties", "add", "rp1", "--audience", AUDIENCE], { COUNTERSIGN_URL: "http://192.168.1.9:8787", COUNTERSIGN_ADMIN_TOKEN: "adm" }, /COUNTERSIGN_URL is http:\/\/ to 192\.168\.1\.9, not loopback/],
      // No admin token, but the party's token is answered (and here supplied): it would cross in clear.
      [["relying-parties", "rotate", "rp1", "--token", "t".repeat(40), "--url", "http://localhost.example"], {}, /not loopback: the relying party's token would cross the network in clear/],
      [["anchors", "pin", "-", "--url", "http://[::ffff:7f00:1]", "--admin-token", "adm"], {}, /not loopback/],
    ];
    for (const [argv, env, message] of refused) {
      let err = "";
      const code = await main(argv, { ...io, env, err: (t) => void (err += t), read: () => "{}" });
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(err).toMatch(message);
    }
    expect(sent).toEqual([]);
    // Loopback, https:// and --insecure-http are sent; so is an http:// call that carries no token at all.
    const allowed: string[][] = [
      ["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9", "--admin-token", "adm"],
      ["anchors", "show", ISSUER, "--url", "http://127.8.9.10:9", "--admin-token", "adm"],
      ["anchors", "show", ISSUER, "--url", "http://localhost:9", "--admin-token", "adm"],
      ["anchors", "show", ISSUER, "--url", "http://[::1]:9", "--admin-token", "adm"],
      ["anchors", "show", ISSUER, "--url", "https://countersign.internal.example", "--admin-token", "adm"],
      ["anchors", "show", ISSUER, "--url", "http://countersign.internal.example", "--admin-token", "adm", "--insecure-http"],
      ["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--url", "http://10.0.0.5", "--admin-token", "adm", "--insecure-http"],
      ["anchors", "show", ISSUER, "--url", "http://countersign.internal.example"],
    ];
    for (const argv of allowed) expect({ argv, code: await main(argv, io) }).toEqual({ argv, code: 0 });
    expect(sent.map((s) => s.auth)).toEqual(["Bearer adm", "Bearer adm", "Bearer adm", "Bearer adm", "Bearer adm", "Bearer adm", "Bearer adm", null]);
  });

  it("a remote command follows no redirect: a 307 would resend its body (a party's token) to another origin, whose answer was reported as the service's (review rv-73)", async () => {
    const calls: RequestInit[] = [];
    // fetch's default (redirect: "follow") is played out: the other origin's 201 is what comes back.
    const fetcher = (async (_input: RequestInfo | URL, init?: RequestInit) => {
      calls.push(init ?? {});
      if (init?.redirect === "manual") return new Response(null, { status: 307, headers: { location: "http://other.example/x" } });
      return Response.json({ name: "rp1", token: "from-elsewhere", audiences: [] }, { status: 201 });
    }) as unknown as typeof fetch;
    let out = "";
    const io: Io = { out: (t) => void (out += t), err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: fetcher };
    const code = await main(["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--token", "t".repeat(40), "--url", "http://127.0.0.1:9", "--admin-token", "adm", "--json"], io);
    expect(calls).toHaveLength(1);
    expect(calls[0].redirect).toBe("manual");
    expect(code).toBe(1);
    const doc = JSON.parse(out);
    expect(doc).toMatchObject({ status: 307, valid: false, decision: "reject", error: { code: "VERIFIER_UNAVAILABLE" } });
    expect(doc.error.detail).toMatch(/answered 307 to http:\/\/other\.example\/x; the CLI follows no redirect/);
  });

  // Every admin API answer is a JSON object: a body that is not JSON (a proxy's login page, another
  // program on the port), or a bare JSON value, was printed with exit 0, "done", for a call that
  // never reached the service (reviews rv-109, rv-110).
  const notAnswers: [string, RegExp][] = [
    ["<html>sign in</html>", /answered 200 with a body that is not JSON/],
    ["", /answered 200 with a body that is not JSON/],
    ...["null", '"ok"', "[]", "1", "true"].map((body): [string, RegExp] => [body, /answered 200 with a body that is not a JSON object/]),
  ];
  it.each(notAnswers)("a 2xx answered %j is VERIFIER_UNAVAILABLE, exit 1, never 'done'", async (body, detail) => {
    let out = "";
    const fetcher = (async () => new Response(body, { status: 200 })) as unknown as typeof fetch;
    const io: Io = { out: (t) => void (out += t), err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: fetcher };
    const code = await main(["anchors", "revoke", "--issuer", ISSUER, "--kid", "k1", "--url", "http://127.0.0.1:9", "--admin-token", "adm", "--json"], io);
    expect(code).toBe(1);
    const doc = JSON.parse(out);
    expect(doc).toMatchObject({ status: 200, valid: false, decision: "reject", error: { code: "VERIFIER_UNAVAILABLE" } });
    expect(doc.error.detail).toMatch(detail);
  });

  it("an error answer that is not JSON stays an error shown as text, exit 1", async () => {
    let out = "";
    const io: Io = { out: (t) => void (out += t), err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: (async () => new Response("Not Found", { status: 404 })) as unknown as typeof fetch };
    expect(await main(["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9", "--json"], io)).toBe(1);
    expect(JSON.parse(out)).toBe("Not Found");
  });

  it("an answer of exactly 8 MiB is read whole (the bound is on what passes it)", async () => {
    const max = 8 * 1024 * 1024;
    const text = JSON.stringify({ issuer: ISSUER, pad: "" });
    const body = text.slice(0, -2) + " ".repeat(max - text.length) + '"}';
    expect(Buffer.byteLength(body)).toBe(max);
    let out = "";
    const io: Io = { out: (t) => void (out += t), err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: (async () => new Response(body, { status: 200 })) as unknown as typeof fetch };
    expect(await main(["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9", "--json"], io)).toBe(0);
    expect(JSON.parse(out).issuer).toBe(ISSUER);
  });

  it("an answer is read up to 8 MiB: a server streaming more is VERIFIER_UNAVAILABLE, exit 1, its read cancelled (review rv-109)", async () => {
    let pulled = 0;
    let cancelled = false;
    const chunk = new Uint8Array(1 << 20).fill(0x20);
    const fetcher = (async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            // 64 MiB at most, so that a read without a bound ends (and fails the test) instead of hanging it.
            if (pulled++ < 64) controller.enqueue(chunk);
            else controller.close();
          },
          cancel() {
            cancelled = true;
          },
        }),
        { status: 200 },
      )) as unknown as typeof fetch;
    let out = "";
    const io: Io = { out: (t) => void (out += t), err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: fetcher };
    expect(await main(["anchors", "show", ISSUER, "--url", "http://127.0.0.1:9", "--json"], io)).toBe(1);
    const doc = JSON.parse(out);
    expect(doc).toMatchObject({ status: null, valid: false, error: { code: "VERIFIER_UNAVAILABLE" } });
    expect(doc.error.detail).toBe(`http://127.0.0.1:9 answered more than ${8 * 1024 * 1024} bytes: not an answer of the admin API`);
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(16);
  });

  it("an admin call answered 401 without any admin token says where the CLI reads one (ADMIN_TOKEN, which the tour exports, is not read)", async () => {
    const fetcher = (async () => Response.json({ error: { code: "UNAUTHORIZED", detail: "a valid admin bearer token is required" } }, { status: 401 })) as unknown as typeof fetch;
    let err = "";
    const io: Io = { out: () => {}, err: (t) => void (err += t), read: (p) => readFileSync(p, "utf8"), env: { ADMIN_TOKEN: "demo-admin-token" }, fetch: fetcher };
    expect(await main(["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--url", "http://127.0.0.1:9"], io)).toBe(1);
    expect(err).toMatch(/: 401 \(no admin token was sent: pass --admin-token or set COUNTERSIGN_ADMIN_TOKEN; ADMIN_TOKEN is not read\)/);
    // A token that was sent and refused is another matter: no such hint.
    err = "";
    expect(await main(["relying-parties", "add", "rp1", "--audience", AUDIENCE, "--url", "http://127.0.0.1:9", "--admin-token", "wrong"], io)).toBe(1);
    expect(err).toBe("POST /v1/admin/relying-parties: 401\n");
  });

  it("relying-parties rotate asks the admin API for a new token of the named party, with the supplied one when given", async () => {
    const sent: { url: string; method: string; auth: string | null; body: string }[] = [];
    const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
      sent.push({ url: String(input), method: init?.method ?? "GET", auth: new Headers(init?.headers).get("authorization"), body: String(init?.body) });
      return Response.json({ name: "rp1", token: "t".repeat(40), audiences: [AUDIENCE] });
    }) as typeof fetch;
    const io: Io = { out: () => {}, err: () => {}, read: (p) => readFileSync(p, "utf8"), env: {}, fetch: fetcher };
    const base = ["--url", "http://127.0.0.1:9", "--admin-token", "adm"];
    expect(await main(["relying-parties", "rotate", "rp1", ...base], io)).toBe(0);
    expect(await main(["relying-parties", "rotate", "rp1", "--token", "s".repeat(32), ...base], io)).toBe(0);
    expect(sent.map(({ url, method, auth, body }) => ({ url, method, auth, body: JSON.parse(body) }))).toEqual([
      { url: "http://127.0.0.1:9/v1/admin/relying-parties/rp1/token", method: "POST", auth: "Bearer adm", body: {} },
      { url: "http://127.0.0.1:9/v1/admin/relying-parties/rp1/token", method: "POST", auth: "Bearer adm", body: { token: "s".repeat(32) } },
    ]);
  });

  it.each([
    [["verify"], /the file to verify is required/],
    [["verify", "x.json"], /--anchors is required|cannot read/],
    [["verify", "--bogus"], /Unknown option/],
    [["sign", "--key", "/nonexistent", "--issuer", ISSUER, "--audience", AUDIENCE], /cannot read key/],
    [["sign", "--key", "/nonexistent"], /--issuer is required/],
    [["frobnicate"], /unknown command/],
    [["anchors", "dance"], /pin, revoke or show/],
    [["relying-parties", "add", "rp1"], /--audience is required/],
  ])("usage errors exit 2: %j", async (argv, message) => {
    const res = await run(...(argv as string[]));
    expect(res.code).toBe(2);
    expect(res.err + res.out).toMatch(message);
  });

  it("a usage error with --json is one line on stderr and nothing on stdout, as --help says", async () => {
    const res = await run("verify", "x.json", "--anchors", at("no-such-anchors.json"), "--json");
    expect(res.code).toBe(2);
    expect(res.out).toBe("");
    expect(res.err.trim().split("\n")).toHaveLength(1);
    // Node's own argument parser answers a negative value given as its own argument in three lines.
    const negative = await run("sign", "--skew", "-1", "--json");
    expect({ code: negative.code, out: negative.out, lines: negative.err.trim().split("\n").length }).toEqual({ code: 2, out: "", lines: 1 });
    expect(negative.err).toMatch(/^countersign sign: Option '--skew' argument is ambiguous\. Did you forget/);
  });

  it("verify --json writes one JSON document on stdout and nothing else (the service's own log lines stay out of it)", async () => {
    const { key, anchors } = await issuerFiles("onedoc");
    const call = await run("sign", "--key", key, "--command", at("command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    writeFileSync(at("onedoc-call.json"), call.out);
    const bin = resolve(ROOT, "cli/bin.mjs");
    for (const mode of ["enforce", "audit"]) {
      const res = spawnSync(process.execPath, [bin, "verify", at("onedoc-call.json"), "--anchors", anchors, "--mode", mode, "--json"], { encoding: "utf8" });
      expect(res.status).toBe(0);
      expect(res.stdout.trim().split("\n")).toHaveLength(1);
      expect(JSON.parse(res.stdout)).toMatchObject({ valid: true, decision: mode === "enforce" ? "accept" : "audit" });
      expect(res.stdout).not.toMatch(/"event"/);
    }
  });

  it("the installed command runs from the checkout with clean output: npx-free `node cli/bin.mjs`", () => {
    const bin = resolve(ROOT, "cli/bin.mjs");
    const help = spawnSync(process.execPath, [bin, "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: countersign/);
    // A token lost to a closed stdout is recovered by rotate: add again is 409, the party exists (rv-83).
    expect(help.stdout).toMatch(/relying-parties rotate NAME\s+gives the party a new one/);
    expect(help.stdout).not.toMatch(/the run must be repeated/);
    // verify --lines judges a call without a mode in enforce mode, verify FILE in audit mode: the help says which (rv-83).
    expect(help.stdout).toMatch(/a line that names no mode is judged as the service would, in enforce\s+mode/);
    const usage = spawnSync(process.execPath, [bin, "verify"], { encoding: "utf8" });
    expect(usage.status).toBe(2);
    expect(usage.stdout).toBe("");
    // No command at all: exit 2 and the usage on stderr, nothing on stdout (it went to stdout).
    const none = spawnSync(process.execPath, [bin], { encoding: "utf8" });
    expect({ status: none.status, stdout: none.stdout }).toEqual({ status: 2, stdout: "" });
    expect(none.stderr).toMatch(/^usage: countersign/);
    const pkg = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8"));
    expect(pkg.bin.countersign).toBe("cli/bin.mjs");
  });
});

describe("input that is not UTF-8 is refused, never read with U+FFFD in place of its bytes", () => {
  const bin = resolve(ROOT, "cli/bin.mjs");
  // A Latin-1 "ö" (0xf6): the service refuses such a body (400 MALFORMED_REQUEST, invalid_utf8).
  const latin1 = (text: string) => Buffer.from(text.replace("LISBON", "Lisb\u00f6n"), "latin1");

  it("sign --command with a Latin-1 byte: exit 2, one line, nothing signed", async () => {
    const { key } = await issuerFiles("u8");
    writeFileSync(at("u8-command.json"), latin1(JSON.stringify({ ...COMMAND, params: { city: "LISBON" } })));
    const res = spawnSync(process.execPath, [bin, "sign", "--key", key, "--command", at("u8-command.json"), "--issuer", ISSUER, "--audience", AUDIENCE], { encoding: "utf8" });
    expect({ status: res.status, stdout: res.stdout }).toEqual({ status: 2, stdout: "" });
    expect(res.stderr).toBe(`countersign sign: cannot read command ${at("u8-command.json")}: not valid UTF-8\n`);
  });

  it("verify of a call whose request holds a Latin-1 byte (its receipt signed for U+FFFD there): exit 2, where it was judged valid", async () => {
    const { key, anchors } = await issuerFiles("u8v");
    writeFileSync(at("u8v-command.json"), JSON.stringify({ ...COMMAND, params: { city: "Lisb\ufffdn" } }));
    const signed = await run("sign", "--key", key, "--command", at("u8v-command.json"), "--issuer", ISSUER, "--audience", AUDIENCE, "--call", "--json");
    expect(signed.code).toBe(0);
    // The file the integrator holds has the raw byte 0xf6 where the receipt bound U+FFFD.
    const bytes = Buffer.from(signed.out, "utf8");
    const at3 = bytes.indexOf(Buffer.from("\ufffd", "utf8"));
    writeFileSync(at("u8v-call.json"), Buffer.concat([bytes.subarray(0, at3), Buffer.from([0xf6]), bytes.subarray(at3 + 3)]));
    const res = spawnSync(process.execPath, [bin, "verify", at("u8v-call.json"), "--anchors", anchors, "--json"], { encoding: "utf8" });
    expect({ status: res.status, stdout: res.stdout }).toEqual({ status: 2, stdout: "" });
    expect(res.stderr).toBe(`countersign verify: cannot read input ${at("u8v-call.json")}: not valid UTF-8\n`);
  });

  it("npm run replay (cli/replay.ts) of a bundle with a Latin-1 byte: exit 2, one line", () => {
    writeFileSync(at("u8-bundle.json"), latin1(JSON.stringify({ bundle: "LISBON" })));
    const tsx = resolve(ROOT, "node_modules/tsx/dist/cli.mjs");
    const res = spawnSync(process.execPath, [tsx, "cli/replay.ts", at("u8-bundle.json")], { cwd: ROOT, encoding: "utf8" });
    expect({ status: res.status, stdout: res.stdout }).toEqual({ status: 2, stdout: "" });
    expect(res.stderr).toBe(`cannot read ${at("u8-bundle.json")}: not valid UTF-8\n`);
  });
});

describe("an input is read up to a bound: an endless or oversized source is a usage error, never read whole (review rv-109)", () => {
  const bin = resolve(ROOT, "cli/bin.mjs");

  it("verify /dev/zero: exit 2 in bounded time and memory, where the CLI read until the system killed it", async () => {
    const { anchors } = await issuerFiles("bound");
    const res = spawnSync(process.execPath, [bin, "verify", "/dev/zero", "--anchors", anchors, "--json"], { encoding: "utf8", timeout: 60_000 });
    expect({ status: res.status, stdout: res.stdout }).toEqual({ status: 2, stdout: "" });
    expect(res.stderr).toMatch(/^countersign verify: cannot read input \/dev\/zero: larger than \d+ bytes, the most an input may hold\n$/);
  }, 70_000);

  it("a file over the bound is refused from its size, before any of it is read, not answered 'not valid UTF-8'", async () => {
    const { anchors } = await issuerFiles("bound2");
    const { MAX_INPUT_BYTES } = await import("../../cli/input.js");
    expect(MAX_INPUT_BYTES).toBeGreaterThan(256 * 1024 * 1024);
    // Sparse: no disk, and NUL bytes are valid UTF-8, so only its size can refuse it.
    writeFileSync(at("bound-sparse.json"), "");
    truncateSync(at("bound-sparse.json"), MAX_INPUT_BYTES + 1);
    // Refused from its size: read whole it would not finish within the spawn's timeout (status null).
    const res = spawnSync(process.execPath, [bin, "verify", at("bound-sparse.json"), "--anchors", anchors, "--json"], { encoding: "utf8", timeout: 30_000 });
    rmSync(at("bound-sparse.json"));
    expect({ status: res.status, stdout: res.stdout }).toEqual({ status: 2, stdout: "" });
    expect(res.stderr).toBe(`countersign verify: cannot read input ${at("bound-sparse.json")}: larger than ${MAX_INPUT_BYTES} bytes, the most an input may hold\n`);
  }, 70_000);

  it("readUtf8 reads a file and standard input's kind of source (a device) up to the bound it is given", async () => {
    const { readUtf8 } = await import("../../cli/input.js");
    writeFileSync(at("bound-small.json"), "x".repeat(100));
    expect(readUtf8(at("bound-small.json"), 100)).toBe("x".repeat(100));
    expect(() => readUtf8(at("bound-small.json"), 99)).toThrow("larger than 99 bytes, the most an input may hold");
    expect(() => readUtf8("/dev/zero", 1 << 16)).toThrow("larger than 65536 bytes");
    expect(readUtf8("/dev/null")).toBe("");
    expect(() => readUtf8(dir)).toThrow("EISDIR");
  });
});

describe("the CLI reaches the Worker's decision on every committed vector", () => {
  it("vectors/ccs/receipts.json, every call in order", async () => {
    const revoked = ccsVectors.vectors.flatMap((v) => ("setup" in v ? v.setup!.revoke : []));
    writeFileSync(at("vec-anchors.json"), JSON.stringify({ anchors: ccsVectors.anchors, revoked, manifests: ccsVectors.manifests }));
    // A verifier-class floor is a relying party's registration, which the offline party does not carry.
    const calls = ccsVectors.vectors.filter((v) => !vectorParty(v)).flatMap((v) => v.calls as never[]);
    writeFileSync(at("vec.jsonl"), calls.map((c) => rawBodyOf(c)).join("\n") + "\n");
    // The relying party holds the Level 0 shared secret in its own environment.
    runEnv = { ...ccsVectors.secrets };
    const res = await run("verify", "--lines", at("vec.jsonl"), "--anchors", at("vec-anchors.json"), "--now", String(ccsVectors.now), "--json");
    runEnv = {};
    const answers = res.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(answers).toHaveLength(calls.length);
    calls.forEach((c, i) => {
      const { status, ...body } = answers[i];
      expect(mismatches(c, { status, body } as Answer), `call ${i}: ${rawBodyOf(c).slice(0, 80)}`).toEqual([]);
    });
  });

  it("vectors/ccs/propagation.json, envelopes and chains", async () => {
    writeFileSync(at("prop-anchors.json"), JSON.stringify({ anchors: pv.anchors }));
    const envelopeCalls = pv.envelopes.flatMap((v) => v.calls as { body: unknown; expect: unknown }[]);
    const lines = [...envelopeCalls.map((c) => JSON.stringify(c.body)), ...pv.chains.map((v) => JSON.stringify(v.body))];
    writeFileSync(at("prop.jsonl"), lines.join("\n") + "\n");
    const res = await run("verify", "--lines", at("prop.jsonl"), "--anchors", at("prop-anchors.json"), "--now", String(pv.now), "--org-id", pv.org_id, "--json");
    const answers = res.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(answers).toHaveLength(lines.length);
    envelopeCalls.forEach((c, i) => {
      const { status, ...body } = answers[i];
      expect(mismatches(c as never, { status, body } as Answer), `envelope call ${i}`).toEqual([]);
    });
    pv.chains.forEach((v, j) => {
      const { status, ...body } = answers[envelopeCalls.length + j];
      expect(chainMismatches(v, { status, body } as ChainAnswer), v.id).toEqual([]);
    });
  });
});

describe("countersign verify: a chain nested as deep as the chain route reads it", () => {
  it("verifies offline a chain whose hop binds a runtime context of the receipt route's depth (31 levels), as the service does; one deeper is a usage error", async () => {
    // The service's chain verify reads bodies 35 deep (972102a); the CLI parsed its input 32 deep
    // and refused such a chain, bare or as a call body, exit 2 "nesting deeper than 32".
    const { identity: makeIdentity, anchorFor, makeChainHops } = await import("../../vectors/ccs/factory.js");
    const { buildChain } = await import("../../worker/protocol/chain.js");
    const id = await makeIdentity("cli-deep-chain", "https://cli-deep-chain.example", "d1");
    writeFileSync(at("deep-anchors.json"), JSON.stringify({ anchors: [anchorFor(id)] }));
    const nest = (levels: number) => {
      let v: unknown = 1;
      for (let d = 0; d < levels; d++) v = { a: v };
      return v;
    };
    const now = Math.floor(Date.now() / 1000);
    const chainOf = async (levels: number) => {
      const hops = await makeChainHops([0, 1].map((i) => ({ id, spec: { label: `cli-deep/${levels}/${i}`, audience: AUDIENCE, issuedAt: now - 5, sequence: now * 10 + i, runtimeContext: { x: nest(levels) } } })));
      return buildChain(`cli-deep-${levels}`, hops);
    };
    // {x: 30 levels} is a runtime context of 31 levels: what the receipt route reads at its place there.
    const chain = await chainOf(30);
    writeFileSync(at("deep-chain.json"), JSON.stringify(chain));
    writeFileSync(at("deep-call.json"), JSON.stringify({ chain }));
    for (const file of ["deep-chain.json", "deep-call.json"]) {
      const res = await run("verify", at(file), "--anchors", at("deep-anchors.json"), "--json");
      expect([file, res.code, res.err]).toEqual([file, 0, ""]);
      expect(JSON.parse(res.out)).toMatchObject({ chain_valid: true, total_hops: 2 });
    }
    // One level deeper is refused, as the service refuses it (400), bare or as a call body.
    const deeper = await chainOf(31);
    writeFileSync(at("deeper-chain.json"), JSON.stringify(deeper));
    writeFileSync(at("deeper-call.json"), JSON.stringify({ chain: deeper }));
    for (const file of ["deeper-chain.json", "deeper-call.json"]) {
      const res = await run("verify", at(file), "--anchors", at("deep-anchors.json"), "--json");
      expect([file, res.code]).toEqual([file, 2]);
      expect(res.err).toMatch(/nesting deeper than 3[45]/);
    }
    // A receipt call stays held to the receipt route's 32.
    writeFileSync(at("deep-receipt-call.json"), JSON.stringify({ receipt: (chain.entries[0] as { receipt: unknown }).receipt, audience: AUDIENCE, runtime_context: { x: nest(31) } }));
    const receipt = await run("verify", at("deep-receipt-call.json"), "--anchors", at("deep-anchors.json"), "--json");
    expect(receipt.code).toBe(2);
    expect(receipt.err).toMatch(/nesting deeper than 32/);
  });
});

describe("countersign manifest verify", () => {
  it("verifies a manifest offline with pure code (exit 0), and a tampered one is invalid with its code (exit 1)", async () => {
    const { identity: makeIdentity, anchorFor } = await import("../../vectors/ccs/factory.js");
    const { manifestOf } = await import("../support/manifests.js");
    const id = await makeIdentity("cli-manifest", "https://cli-manifest.example", "m1");
    const now = Math.floor(Date.now() / 1000);
    const m = await manifestOf(id, [{ id: "ccs/1.3/intake", comparison_scope: "command" }], { published_at: now - 10, expires_at: now + 3600 });
    writeFileSync(at("manifest.json"), JSON.stringify(m));
    writeFileSync(at("manifest-anchors.json"), JSON.stringify(anchorFor(id)));
    const ok = await run("manifest", "verify", at("manifest.json"), "--anchors", at("manifest-anchors.json"), "--json");
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ valid: true, verifier_id: id.issuer, kid: "m1", profiles_digest: m.profiles_digest });
    writeFileSync(at("manifest-bad.json"), JSON.stringify({ ...m, expires_at: m.expires_at + 1 }));
    const bad = await run("manifest", "verify", at("manifest-bad.json"), "--anchors", at("manifest-anchors.json"), "--json");
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({ valid: false, code: "MANIFEST_SIGNATURE_INVALID" });
    expect((await run("manifest", "verify", at("manifest.json"))).code).toBe(2);
  });

  it("judges a manifest under the keys the trust file leaves current, as verify and the service do: a key rotated out by a later anchor signs nothing", async () => {
    const { identity: makeIdentity, anchorFor } = await import("../../vectors/ccs/factory.js");
    const { manifestOf } = await import("../support/manifests.js");
    const old = await makeIdentity("cli-manifest-rotated", "https://cli-manifest-rotated.example", "old");
    const next = await makeIdentity("cli-manifest-rotated-next", old.issuer, "next");
    const now = Math.floor(Date.now() / 1000);
    const byOld = await manifestOf(old, [{ id: "ccs/1.3/intake", comparison_scope: "command" }], { published_at: now - 10, expires_at: now + 3600 });
    const byNext = await manifestOf(next, byOld.profiles, { published_at: now - 10, expires_at: now + 3600 });
    writeFileSync(at("rotated-old.json"), JSON.stringify(byOld));
    writeFileSync(at("rotated-next.json"), JSON.stringify(byNext));
    // The old key pinned, then replaced by the next one: what `verify` (and a service given the same pins) holds.
    writeFileSync(at("rotated-anchors.json"), JSON.stringify({ anchors: [anchorFor(old), anchorFor(next)] }));
    const refused = await run("manifest", "verify", at("rotated-old.json"), "--anchors", at("rotated-anchors.json"), "--json");
    expect([refused.code, JSON.parse(refused.out).code]).toEqual([1, "MANIFEST_KEY_UNKNOWN"]);
    // `verify` refuses the same manifest in the same trust file, with the same code.
    writeFileSync(at("rotated-trust.json"), JSON.stringify({ anchors: [anchorFor(old), anchorFor(next)], manifests: [{ manifest: byOld }] }));
    writeFileSync(at("rotated-receipt.json"), JSON.stringify({ signature: "", nonce: "" }));
    const viaVerify = await run("verify", at("rotated-receipt.json"), "--anchors", at("rotated-trust.json"));
    expect([viaVerify.code, viaVerify.err]).toEqual([2, expect.stringContaining("MANIFEST_KEY_UNKNOWN")]);
    const current = await run("manifest", "verify", at("rotated-next.json"), "--anchors", at("rotated-anchors.json"), "--json");
    expect([current.code, JSON.parse(current.out).kid]).toEqual([0, "next"]);
  });
});

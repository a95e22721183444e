/**
 * `npm run bench [-- --quick]`: measures, in one run on this machine,
 *  1. per-verification CPU inside workerd: raw WebCrypto Ed25519 verify, countersign's full
 *     stateless verification (WebCrypto and @noble/ed25519), jose jwtVerify, and each stage;
 *  2. HTTP throughput and latency of enforce-mode POST /v1/receipts/verify (every request a fresh
 *     receipt that claims a nonce) next to a one-DO-round-trip baseline, over 1, 8 and 64
 *     issuers, and one hot issuer on 1 vs 4 ledger shards;
 *  3. ledger size after the purge alarm.
 * Prints a Markdown table and writes bench/results.json.
 */
import autocannon from "autocannon";
import { execSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { importJWK, SignJWT } from "jose";
import { PROJECT_ROOT, startLocalServer, type LocalServer } from "../scripts/local-server.js";
import { CONNECTIONS, renderMarkdown, renderPaperTable, writeCapacityFigures } from "./report.js";
import { buildChain, receiptDigest, receiptHashOf, type KeptEntry } from "../worker/protocol/chain.js";
import { signSeal } from "../worker/protocol/chain-seal.js";
import { toBase64Url } from "../worker/protocol/encoding.js";
import { anchorFor, identity, makeChainHops, makeReceipt, type Identity } from "../vectors/ccs/factory.js";

const quick = process.argv.includes("--quick");
/** `--cases=a,b` times only those CPU cases and stops (for profiling one stage). */
const onlyCases = process.argv.find((a) => a.startsWith("--cases="))?.slice(8).split(",");
/** `--profile=case` records a V8 CPU profile of that case through the DevTools inspector and prints its heaviest functions. */
const profileCase = process.argv.find((a) => a.startsWith("--profile="))?.slice(10);
/**
 * The Worker is served through wrangler's own `unstable_startWorker` with the DevTools inspector
 * off (scripts/serve-without-inspector.ts): `wrangler dev` attaches an inspector, and each
 * `console.log` then costs ~90 µs of the isolate's time, which a deployed Worker does not pay.
 * `--inspector` serves with `wrangler dev` as `npm start` does, for comparison; `--profile` needs it.
 */
const withInspector = process.argv.includes("--inspector") || profileCase !== undefined;
const AUDIENCE = "https://relying-party.example";
const TOKEN = "bench-admin-token";
const CPU_ROUNDS = quick ? 7 : 15;
const CPU_N: Record<string, number> = {
  raw: quick ? 1000 : 3000,
  full: quick ? 1000 : 3000,
  noble: quick ? 100 : 300,
  jose: quick ? 1000 : 3000,
  "chain-16-full": quick ? 60 : 200,
  "chain-16-spot": quick ? 300 : 1000,
  "bundle-replay": quick ? 20 : 60,
  "intake:raw-sign": quick ? 1000 : 3000,
  "intake:issue": quick ? 1000 : 3000,
  "ec-serialise": quick ? 1000 : 3000,
  "ec-verify": quick ? 300 : 1000,
  "ec-replay-1": quick ? 200 : 600,
  // Timed beside `full`, in the same rounds: route_over_full is their ratio.
  "route": quick ? 500 : 1500,
  "route:without-log-write": quick ? 500 : 1500,
};
/** The bench Worker's own signing identity (public demo values) and intake token. */
const INTAKE_TOKEN = "bench-intake-token";
const IDENTITY_VARS = {
  ISSUER: "https://bench-countersign.example",
  ORG_ID: "https://relying-org.example",
  SIGNING_KEY: "fb477c555263404d1ed11ab838d941774da0329b7907d835537dc0740400237f",
  SIGNING_KID: "bench-1",
  LEGACY_HMAC_KEY: "e6307a4f04e9a1f101d089e205df97b874f972de6734d565eb128af532b594b5",
  INTAKE_TOKEN,
};
const intakeBody = (i: number, now: number) =>
  JSON.stringify({ intake_version: "1.3", agent_id: "bench-agent", tool: "search_web", params: { query: `weather in Tokyo #${i}` }, timestamp: now, trace_id: i.toString(16).padStart(16, "0") });

/** The paper's timing table (ms) and the case that measures each row here. */
const PAPER_TIMINGS: [string, string, number][] = [
  ["serialisation (one receipt and its trace, canonical bytes)", "ec-serialise", 0.19],
  ["online verification of one receipt", "ec-verify", 0.47],
  ["replay of one bundle (one execution, one receipt)", "ec-replay-1", 1.31],
];
/** The EC-Agent fixture bundle the bench replays, read once. */
const ecBundle = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/bundle.json"), "utf8")) as { rows: Record<string, { receipts?: unknown[] }> };
/** Its size, counted from the bundle itself (the chains_and_bundles sentence). */
const bundleShape = (() => {
  const executions = Object.values(ecBundle.rows).filter((row) => Array.isArray(row.receipts));
  return { executions: executions.length, receipts: executions.reduce((n, row) => n + row.receipts!.length, 0) };
})();
const paperTable = (cpu: Record<string, number>) =>
  PAPER_TIMINGS.filter(([, c]) => cpu[c] !== undefined).map(([what, c, paper_ms]) => ({ what, case: c, ours_ms: round(cpu[c] / 1000, 3), paper_ms }));
const STAGE_N = quick ? 3000 : 10000;
const HTTP_REQUESTS = quick ? 1500 : 5000;
const HTTP_ROUNDS = quick ? 3 : 5;
/** The relying party every benchmarked verification call authenticates as. */
const RP_TOKEN = "bench-relying-party-token-0123456789abcdef";
const RP_AUTH = `Bearer ${RP_TOKEN}`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const log = (msg: string) => process.stderr.write(msg + "\n");

async function post(server: LocalServer, path: string, body: unknown, token?: string) {
  const res = await fetch(server.url + path, {
    method: path.startsWith("/v1/admin/anchors") && !path.endsWith("revoke") ? "PUT" : "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

let resetup: (() => Promise<void>) | null = null;

async function timeRequest(server: LocalServer, path: string, retried = false): Promise<number> {
  const t0 = process.hrtime.bigint();
  const res = await fetch(server.url + path, { method: "POST" });
  const text = await res.text();
  if (res.status === 409 && resetup && !retried) {
    log(`bench worker lost its inputs (isolate restarted); setting up again`);
    await resetup();
    return timeRequest(server, path, true);
  }
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return Number(process.hrtime.bigint() - t0) / 1e3;
}

/**
 * µs per op of a case from t(n) and t(0), cases interleaved within each round. "Best" is
 * (min t(n) − min t(0)) / n: noise on a shared machine only ever adds time, so each minimum is
 * the closest to its noiseless value. (The minimum of the per-round differences, used before, is
 * biased low: a t(0) slowed by a collection or a scheduling hiccup makes that round's difference
 * small, and the minimum picks exactly that round; sub-microsecond stages came out as 0.) The
 * median of the per-round differences is reported beside it.
 */
async function cpuBench(server: LocalServer, cases: Record<string, number>): Promise<{ best: Record<string, number>; median: Record<string, number> }> {
  const empty: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((c) => [c, []]));
  const loaded: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((c) => [c, []]));
  for (const [c, n] of Object.entries(cases)) await timeRequest(server, `/bench/run?case=${encodeURIComponent(c)}&n=${Math.ceil(n / 10)}`);
  for (let r = 0; r < CPU_ROUNDS; r++) {
    for (const [c, n] of Object.entries(cases)) {
      empty[c].push(await timeRequest(server, `/bench/run?case=${encodeURIComponent(c)}&n=0`));
      loaded[c].push(await timeRequest(server, `/bench/run?case=${encodeURIComponent(c)}&n=${n}`));
    }
  }
  const per = (c: string, t: number) => Math.max(0, round(t / cases[c]));
  return {
    best: Object.fromEntries(Object.keys(cases).map((c) => [c, per(c, Math.min(...loaded[c]) - Math.min(...empty[c]))])),
    median: Object.fromEntries(Object.keys(cases).map((c) => [c, per(c, median(loaded[c].map((t, i) => t - empty[c][i])))])),
  };
}

async function cpuInputs() {
  const id = await identity("bench/cpu", "https://bench-issuer.example", "b1");
  const now = Math.floor(Date.now() / 1000);
  const { receipt, request } = await makeReceipt(id, { label: "bench/cpu", audience: AUDIENCE, issuedAt: now, sequence: 1, lifetime: 300 });
  const d = toBase64Url(id.seed);
  const privateKey = await importJWK({ kty: "OKP", crv: "Ed25519", d, x: id.publicKey }, "EdDSA");
  const { issuer, audience, issued_at, expires_at, ...claims } = receipt;
  const jwt = await new SignJWT({ ...claims })
    .setProtectedHeader({ alg: "EdDSA" })
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt(issued_at)
    .setExpirationTime(expires_at)
    .sign(privateKey);
  const hops = await makeChainHops(Array.from({ length: 16 }, (_, i) => ({ id, spec: { label: `bench/chain/${i}`, audience: AUDIENCE, issuedAt: now, sequence: 10 + i, lifetime: 300 } })));
  const chain = await buildChain("bench-16", hops);
  const tail = chain.entries.at(-1)!;
  const inputs = {
    bodyText: JSON.stringify({ receipt, audience: AUDIENCE, request }),
    chain,
    // Spot verification vouches for a chain only under a seal, so the spot case verifies one.
    seal: signSeal({ chain_id: chain.chain_id, total_hops: chain.total_hops, summary_hash: chain.summary_hash, tail: receiptHashOf(await receiptDigest((tail as KeptEntry).receipt)) }, id, now),
    bundle: ecBundle,
    anchor: { ...anchorFor(id), chain_sealer: true, keys: anchorFor(id).keys.map((k) => ({ ...k, fingerprint: "0".repeat(64), not_before: null, not_after: null })), pinned_at: now },
    jwt,
    jwtIssuer: issuer,
    audience: AUDIENCE,
    rpToken: RP_TOKEN,
    now: now + 1,
    intakeText: intakeBody(1, now),
  };
  return { inputs, pin: anchorFor(id) };
}

interface HttpResult {
  label: string;
  requests: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  non2xx: number;
  accepted: number;
}

/** Fires `bodies` (each used once) at `path` with autocannon; counts accepted decisions. */
async function load(server: LocalServer, label: string, path: string, bodies: string[], authorization?: string): Promise<HttpResult> {
  let next = 0;
  let accepted = 0;
  // Timed from the first request out to the last response in: autocannon itself only stops on a 1 s tick.
  let first = 0n;
  let last = 0n;
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    amount: bodies.length,
    requests: [
      {
        method: "POST",
        path,
        headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
        setupRequest: (req) => {
          if (next === 0) first = process.hrtime.bigint();
          return { ...req, body: bodies[next++ % bodies.length] };
        },
        onResponse: (status, body) => {
          last = process.hrtime.bigint();
          if (status === 200 && body.includes('"decision":"accept"')) accepted++;
          if (path === "/bench/baseline" && status === 200) accepted++;
          if (path === "/v1/intake" && status === 200 && body.includes('"verdict":"allow"')) accepted++;
        },
      },
    ],
  });
  const seconds = Number(last - first) / 1e9;
  return {
    label,
    requests: result.requests.total,
    rps: round(result.requests.total / seconds, 0),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    accepted,
  };
}

let sequence = Date.now() * 1000;
async function signedBodies(ids: Identity[], count: number, lifetime: number, tag: string): Promise<string[]> {
  const now = Math.floor(Date.now() / 1000);
  const bodies: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = ids[i % ids.length];
    const { receipt, request } = await makeReceipt(id, { label: `${tag}/${now}/${i}`, audience: AUDIENCE, issuedAt: now, sequence: ++sequence, lifetime, skew: 0 });
    bodies.push(JSON.stringify({ receipt, audience: AUDIENCE, request }));
  }
  return bodies;
}

function versions() {
  const pkg = (name: string) => JSON.parse(readFileSync(resolve(PROJECT_ROOT, "node_modules", name, "package.json"), "utf8")).version;
  return { node: process.version, wrangler: pkg("wrangler"), workerd: pkg("workerd"), hono: pkg("hono"), jose: pkg("jose"), "@noble/ed25519": pkg("@noble/ed25519"), autocannon: pkg("autocannon") };
}

function machine() {
  let kernel = "";
  try {
    kernel = execSync("uname -srm").toString().trim();
  } catch {
    /* not unix */
  }
  return { cpu: cpus()[0]?.model, cores: cpus().length, memory_gib: round(totalmem() / 2 ** 30, 1), kernel };
}

async function main() {
  const started = Date.now();
  const persistTo = mkdtempSync(join(tmpdir(), "countersign-bench-"));
  const server = await startLocalServer({ inspector: withInspector, persistTo, config: resolve(PROJECT_ROOT, "bench/wrangler.toml"), vars: { ADMIN_TOKEN: TOKEN, ...IDENTITY_VARS } });
  try {
    log("CPU: setting up inputs");
    const cpuSetup = await cpuInputs();
    await post(server, "/v1/admin/anchors", cpuSetup.pin, TOKEN);
    await post(server, "/v1/admin/relying-parties", { name: "bench", audiences: [AUDIENCE], token: RP_TOKEN }, TOKEN);
    resetup = async () => void (await post(server, "/bench/setup", cpuSetup.inputs));
    await resetup();
    if (profileCase) {
      await profile(server, profileCase);
      return;
    }
    if (onlyCases) {
      const best = (await cpuBench(server, Object.fromEntries(onlyCases.map((c) => [c, CPU_N[c] ?? STAGE_N])))).best;
      console.log(best);
      const ecRows = paperTable(best);
      if (ecRows.length) console.log("\n" + renderPaperTable(ecRows));
      return;
    }
    log("CPU: timing raw / full / noble / jose");
    const cpuRuns = await cpuBench(server, CPU_N);
    const cpu = cpuRuns.best;
    log("CPU: timing stages");
    const stageNames = ["route:dispatch", "route:auth", "route:body-read", "route:call-validation", "route:answer", "route:log-line", "stage:parse", "stage:schema", "stage:canonical", "stage:freshness+audience", "stage:params_digest", "stage:request_hash", "stage:receipt_hash", "stage:signature", "stage:binding", "native:json-parse", "native:utf8", "native:digests", "digest:subtle-120B", "digest:noble-120B", "digest:subtle-1300B", "digest:noble-1300B"];
    const stageRuns = await cpuBench(server, Object.fromEntries(stageNames.map((s) => [s, STAGE_N])));
    const stages = stageRuns.best;

    log("HTTP: pinning 64 issuers and signing inputs");
    const ids = await Promise.all(Array.from({ length: 64 }, (_, i) => identity(`bench/http/${i}`, `https://bench-${i}.example`, "k1")));
    for (const id of ids) await post(server, "/v1/admin/anchors", anchorFor(id), TOKEN);
    const hot4 = await identity("bench/http/hot4", "https://bench-hot4.example", "k1");
    await post(server, "/v1/admin/anchors", { ...anchorFor(hot4), ledger_shards: 4 }, TOKEN);
    const purge = await identity("bench/purge", "https://bench-purge.example", "k1");
    await post(server, "/v1/admin/anchors", anchorFor(purge), TOKEN);

    const warm = await signedBodies(ids.slice(0, 8), 500, 120, "warm");
    await load(server, "warm-up", "/v1/receipts/verify", warm, RP_AUTH);
    await load(server, "warm-up baseline", "/bench/baseline", warm);

    // Each configuration runs ROUNDS interleaved pairs (baseline, then enforce) on fresh
    // receipts; the ratio reported is the median of the per-pair ratios, which holds up on a
    // shared machine better than one long run of each.
    const http: HttpResult[] = [];
    const pairRatios: Record<string, number> = {};
    const claimRatios: number[] = [];
    const claimStats = async () => (await (await fetch(`${server.url}/bench/ledger?name=bench-claim-1`)).json()) as { nonces: number; database_bytes: number; rows_written: number };
    /** Rows written by the claim-only rounds, read right before and after each round. */
    const claimRows = { claims: 0, rows_written: 0 };
    const unloggedRatios: number[] = [];
    let hotLedger = { nonces: 0, database_bytes: 0 };
    const runs: [string, Identity[]][] = [["enforce, 1 issuer", ids.slice(0, 1)], ["enforce, 8 issuers", ids.slice(0, 8)], ["enforce, 64 issuers", ids], ["enforce, 1 hot issuer, 4 shards", [hot4]]];
    for (const [label, group] of runs) {
      log(`HTTP: ${label}`);
      const ratios: number[] = [];
      for (let round = 0; round < HTTP_ROUNDS; round++) {
        const bodies = await signedBodies(group, HTTP_REQUESTS, 300, label);
        // The baseline receives the very same bodies (and ignores them), so transport costs match.
        const baseline = await load(server, "baseline: one DO round trip", "/bench/baseline", bodies);
        if (label === "enforce, 1 issuer") {
          const before = await claimStats();
          const claim = await load(server, "ledger claim only", "/bench/claim?run=1", bodies);
          const after = await claimStats();
          // The counter lives in the object's memory: a round across an eviction is not counted.
          if (after.rows_written >= before.rows_written && after.nonces - before.nonces === claim.accepted) {
            claimRows.claims += claim.accepted;
            claimRows.rows_written += after.rows_written - before.rows_written;
          }
          http.push(claim);
          claimRatios.push(claim.rps / baseline.rps);
          http.push(await load(server, "enforce route without its ledger", "/bench/stateless/v1/receipts/verify", bodies, RP_AUTH));
          const unlogged = await load(server, "enforce, decision log line not written", "/bench/unlogged/v1/receipts/verify", await signedBodies(group, HTTP_REQUESTS, 300, `${label}/unlogged`), RP_AUTH);
          http.push(unlogged);
          unloggedRatios.push(unlogged.rps / baseline.rps);
        }
        const enforce = await load(server, label, "/v1/receipts/verify", bodies, RP_AUTH);
        http.push(baseline, enforce);
        ratios.push(enforce.rps / baseline.rps);
      }
      pairRatios[label] = round(median(ratios));
      // Read before any of its receipts expires (a purge would shrink the rows, not the file).
      if (label === "enforce, 1 issuer") hotLedger = (await (await fetch(`${server.url}/bench/ledger?name=${encodeURIComponent(ids[0].issuer)}`)).json()) as { nonces: number; database_bytes: number };
    }

    pairRatios["ledger claim only"] = round(median(claimRatios));
    pairRatios["enforce, decision log line not written"] = round(median(unloggedRatios));
    const claimLedger = await claimStats();

    // Intake: every request judged, sequenced by the key's IssuingSequence object and signed.
    log("HTTP: intake, 1 signing key");
    const intakeRatios: number[] = [];
    for (let round = 0; round < HTTP_ROUNDS; round++) {
      const now = Math.floor(Date.now() / 1000);
      const bodies = Array.from({ length: HTTP_REQUESTS }, (_, i) => intakeBody(round * HTTP_REQUESTS + i + 1, now));
      const baseline = await load(server, "baseline: one DO round trip", "/bench/baseline", bodies);
      const intake = await load(server, "intake, 1 signing key", "/v1/intake", bodies, `Bearer ${INTAKE_TOKEN}`);
      http.push(baseline, intake);
      intakeRatios.push(intake.rps / baseline.rps);
    }
    pairRatios["intake, 1 signing key"] = round(median(intakeRatios));

    // The two-phase path: intake + start + finalise of one Command per request, on the journal.
    log("HTTP: two-phase (intake + start + finalise)");
    const twoPhaseRatios: number[] = [];
    const journalBefore = (await (await fetch(`${server.url}/bench/journal`)).json()) as { records: number; rows_written: number };
    let finalised = 0;
    for (let round = 0; round < HTTP_ROUNDS; round++) {
      const now = Math.floor(Date.now() / 1000);
      const bodies = Array.from({ length: HTTP_REQUESTS }, (_, i) => intakeBody(0x4000000 + round * HTTP_REQUESTS + i + 1, now));
      const baseline = await load(server, "baseline: one DO round trip", "/bench/baseline", bodies);
      const twoPhase = await load(server, "two-phase: intake + start + finalise", "/bench/two-phase", bodies, `Bearer ${INTAKE_TOKEN}`);
      http.push(baseline, twoPhase);
      finalised += twoPhase.accepted;
      twoPhaseRatios.push(twoPhase.rps / baseline.rps);
    }
    pairRatios["two-phase: intake + start + finalise"] = round(median(twoPhaseRatios));
    const journalAfter = (await (await fetch(`${server.url}/bench/journal`)).json()) as { records: number; rows_written: number };

    // Nonce storage: short-lived and long-lived receipts of one issuer, then its purge alarm
    // (which first fires PURGE_INTERVAL after the first claim), then its row count.
    log("ledger: loading the purge issuer, then waiting for its alarm");
    const purgeStart = Date.now();
    const shortLived = await signedBodies([purge], quick ? 300 : 1000, 5, "purge-short");
    const longLived = await signedBodies([purge], 50, 300, "purge-long");
    const purgeLoad = await load(server, "purge issuer", "/v1/receipts/verify", [...shortLived, ...longLived], RP_AUTH);
    const ledgerRows = async () => ((await (await fetch(`${server.url}/bench/ledger?name=${encodeURIComponent(purge.issuer)}`)).json()) as { nonces: number }).nonces;
    const rowsAfterLoad = await ledgerRows();
    await new Promise((r) => setTimeout(r, Math.max(0, purgeStart + 40_000 - Date.now())));
    const rowsAfterPurge = await ledgerRows();

    const medianRps = (label: string) => median(http.filter((h) => h.label === label).map((h) => h.rps));
    const summary = [...new Set(http.map((h) => h.label))].map((label) => {
      const rows = http.filter((h) => h.label === label);
      return { label, rounds: rows.length, requests: rows.reduce((n, h) => n + h.requests, 0), median_rps: medianRps(label), median_p50_ms: median(rows.map((h) => h.p50_ms)), median_p99_ms: median(rows.map((h) => h.p99_ms)), errors: rows.reduce((n, h) => n + h.errors + h.non2xx, 0), accepted: rows.reduce((n, h) => n + h.accepted, 0) };
    });
    const results = {
      generated_at: new Date().toISOString(),
      mode: quick ? "quick" : "full",
      server: withInspector ? "wrangler dev (DevTools inspector attached)" : "wrangler unstable_startWorker, DevTools inspector off (as deployed: no inspector)",
      machine: machine(),
      versions: versions(),
      cpu_us_per_op: cpu,
      cpu_us_per_op_median: cpuRuns.median,
      stages_us_per_op: stages,
      stages_us_per_op_median: stageRuns.median,
      cpu_rounds: CPU_ROUNDS,
      iterations_per_round: { ...CPU_N, stages: STAGE_N },
      http_summary: summary,
      http_pair_ratios: pairRatios,
      http_runs: http,
      ledger_purge: {
        issuer: purge.issuer,
        accepted: purgeLoad.accepted,
        short_lived: shortLived.length,
        long_lived: longLived.length,
        rows_after_load: rowsAfterLoad,
        rows_after_purge: rowsAfterPurge,
      },
      storage_per_nonce: {
        ledger: ids[0].issuer,
        rows: hotLedger.nonces,
        database_bytes: hotLedger.database_bytes,
        bytes_per_nonce: round(hotLedger.database_bytes / hotLedger.nonces, 0),
      },
      claim_writes: {
        ledger: "bench-claim-1 (every claim a fresh nonce with a key tag and a sequence, no Idempotency-Key)",
        claims: claimRows.claims,
        rows_written: claimRows.rows_written,
        rows_written_per_claim: claimRows.claims > 0 ? round(claimRows.rows_written / claimRows.claims, 2) : null,
        database_bytes: claimLedger.database_bytes,
        bytes_per_claim: round(claimLedger.database_bytes / claimLedger.nonces, 0),
      },
      ec_agent_paper_table: paperTable(cpu),
      chains_and_bundles: `a 16-hop chain costs ${cpu["chain-16-full"]} µs to verify in full (${round(cpu["chain-16-full"] / cpu.raw, 1)} raw verifications) and ${cpu["chain-16-spot"]} µs at one spot; replaying the ${bundleShape.receipts}-receipt, ${bundleShape.executions}-execution EC-Agent fixture bundle costs ${cpu["bundle-replay"]} µs (${round(cpu["bundle-replay"] / bundleShape.receipts, 0)} µs a receipt)`,
      ratios: {
        full_over_raw: round(cpu.full / cpu.raw),
        full_over_jose: round(cpu.full / cpu.jose),
        noble_over_raw: round(cpu.noble / cpu.raw),
        route_over_full: round(cpu["route"] / cpu.full),
        route_without_log_write_over_full: round(cpu["route:without-log-write"] / cpu.full),
        claim_over_baseline: pairRatios["ledger claim only"],
        http_over_baseline: pairRatios["enforce, 1 issuer"],
        http_unlogged_over_baseline: pairRatios["enforce, decision log line not written"],
        http_8_issuers_over_baseline: pairRatios["enforce, 8 issuers"],
        http_64_issuers_over_baseline: pairRatios["enforce, 64 issuers"],
        hot_issuer_4_shards_over_baseline: pairRatios["enforce, 1 hot issuer, 4 shards"],
        intake_issue_over_raw_sign: round(cpu["intake:issue"] / cpu["intake:raw-sign"]),
        intake_http_over_baseline: pairRatios["intake, 1 signing key"],
        two_phase_http_over_baseline: pairRatios["two-phase: intake + start + finalise"],
        journal_rows_written_per_finalised_receipt: finalised > 0 ? round((journalAfter.rows_written - journalBefore.rows_written) / finalised, 1) : null,
        hot_issuer_4_shards_over_1_shard: round(medianRps("enforce, 1 hot issuer, 4 shards") / medianRps("enforce, 1 issuer")),
      },
      duration_s: round((Date.now() - started) / 1000, 0),
    };
    writeFileSync(resolve(PROJECT_ROOT, "bench/results.json"), JSON.stringify(results, null, 2) + "\n");
    writeCapacityFigures(results);
    console.log(renderMarkdown(results));
  } finally {
    await server.stop();
    rmSync(persistTo, { recursive: true, force: true });
  }
}

/** Self time by function over `n` runs of one case, from the runtime's own sampling profiler. */
async function profile(server: LocalServer, name: string): Promise<void> {
  const { default: WebSocket } = await import("ws");
  const targets = (await (await fetch(`http://127.0.0.1:${server.inspectorPort}/json`)).json()) as { webSocketDebuggerUrl: string; title: string }[];
  const target = targets.find((t) => !t.title.includes("ProxyWorker")) ?? targets[0];
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r) => ws.once("open", r));
  let id = 0;
  const send = (method: string, params: object = {}) =>
    new Promise<any>((ok) => {
      const mine = ++id;
      const onMessage = (data: Buffer) => {
        const msg = JSON.parse(data.toString());
        if (msg.id === mine) {
          ws.off("message", onMessage);
          ok(msg.result);
        }
      };
      ws.on("message", onMessage);
      ws.send(JSON.stringify({ id: mine, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 50 });
  // `http:/path` profiles the isolate under HTTP load on that path (fresh receipts of one pinned issuer).
  const httpPath = name.startsWith("http:") ? name.slice(5) : null;
  let run: () => Promise<unknown>;
  if (httpPath) {
    const id = await identity("bench/profile", "https://bench-profile.example", "k1");
    await post(server, "/v1/admin/anchors", anchorFor(id), TOKEN);
    await load(server, "warm-up", httpPath, await signedBodies([id], 300, 300, "profile-warm"), RP_AUTH);
    const bodies = await signedBodies([id], HTTP_REQUESTS, 300, "profile");
    run = () => load(server, name, httpPath, bodies, RP_AUTH);
  } else {
    await timeRequest(server, `/bench/run?case=${encodeURIComponent(name)}&n=500`);
    run = () => timeRequest(server, `/bench/run?case=${encodeURIComponent(name)}&n=${(CPU_N[name] ?? STAGE_N) * 3}`);
  }
  await send("Profiler.start");
  console.log(await run());
  const { profile: p } = await send("Profiler.stop");
  ws.close();
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const total = p.samples.length;
  const byId = new Map<number, any>(p.nodes.map((node: any) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of p.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const keyOf = (node: any) => `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.split("/").slice(-2).join("/")}:${node.callFrame.lineNumber + 1}`;
  for (const sample of p.samples) {
    self.set(keyOf(byId.get(sample)), (self.get(keyOf(byId.get(sample))) ?? 0) + 1);
    const seen = new Set<string>();
    for (let at: number | undefined = sample; at !== undefined; at = parent.get(at)) seen.add(keyOf(byId.get(at)));
    for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + 1);
  }
  const top = (m: Map<string, number>, label: string) => {
    console.log(`\n${name}, ${label} (${total} samples)`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  };
  top(self, "self time");
  top(inclusive, "inclusive time");
}

await main();

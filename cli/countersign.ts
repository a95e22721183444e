/**
 * `countersign`: keys, receipts and verification for issuers, relying parties, auditors and CI.
 *
 *   keygen, sign, verify (offline, the service's own code), replay: need nothing running.
 *   anchors pin|revoke|show, relying-parties add|rotate: talk to a running instance's admin API.
 *
 * Exit codes: 0 valid / done, 1 invalid / refused, 2 usage (bad flags, unreadable input, unwritable output).
 * `--json` prints one compact JSON document on stdout and nothing on stderr.
 */
import { lstatSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { jcs, prefixedDigest, sha256Hex } from "../worker/protocol/digest.js";
import { publicKeyFromSeed } from "../worker/protocol/ed25519.js";
import { fromHex, SHA256_REF, toBase64Url, toHex } from "../worker/protocol/encoding.js";
import { renderReport, replayBundle, replaySummary } from "../worker/protocol/ec/bundle.js";
import { signReceipt, unsignedReceipt } from "../worker/protocol/issue.js";
import { requestProblem, type PresentedRequest } from "../worker/protocol/checks/binding.js";
import { isHttpsUri, MAX_URI_BYTES, parseReceipt, type Verdict } from "../worker/protocol/receipt.js";
import { DEFAULT_FRESHNESS } from "../worker/protocol/checks/freshness.js";
import { MAX_VERIFY_BODY } from "../worker/config.js";
import { DEFAULT_MAX_DEPTH, isJsonObject, parseStrictJson } from "../worker/protocol/strict-json.js";
import { VERIFY_BODY_DEPTH as CHAIN_VERIFY_BODY_DEPTH } from "../worker/routes/chains.js";
import { offlineVerifier, readTrustFile, sharedSecretsOf, UsageError } from "./offline.js";
import { buildAnchorRecord, pinnedIssuer } from "../worker/protocol/anchors.js";
import { MAX_AUDIENCES_PER_PARTY, RELYING_PARTY_NAME, RELYING_PARTY_NAME_RULE, RELYING_PARTY_TOKEN } from "../worker/protocol/relying-parties.js";
import { nobleVerifier } from "../worker/protocol/ed25519.js";
import { isLoopbackHost } from "../worker/client.js";
import { verifyManifest } from "../worker/protocol/manifest/manifest.js";
import { OutputError, refuseOverwritingInput, writeOutputs } from "./output.js";
import { readUtf8 } from "./input.js";

/**
 * Whether a directory entry is there, a link that leads nowhere included: existsSync follows a
 * link, so keygen without --force replaced a dangling PREFIX.key link as if nothing were there.
 */
const entryExists = (path: string): boolean => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Reads a file, or standard input for "-", as UTF-8 text (bytes that are not UTF-8 are refused). */
  read(path: string): string;
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
}

const nodeIo: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  read: readUtf8,
  env: process.env,
  fetch: (...args) => fetch(...args),
};

export const USAGE = `usage: countersign <command> [options]

  keygen [--out PREFIX] [--kid KID] [--issuer URI] [--force]
                                                      an Ed25519 key pair: PREFIX.key (seed, 0600), PREFIX.pub.json,
                                                      and with --issuer PREFIX.anchor.json (ready to pin)
  sign --key FILE --command FILE --issuer URI --audience URI
       [--verdict allow|deny|escalate] [--block-reason TEXT] [--lifetime S] [--skew S]
       [--sequence N] [--response FILE] [--runtime-context FILE] [--call]
                                                      a signed CCS v1.3 receipt (or, with --call, a verification call body);
                                                      URIs https://, 0 < lifetime <= ${DEFAULT_FRESHNESS.maxLifetime} (default 60), skew >= 0,
                                                      sequence an integer 0..2^53-1 (default: microseconds since the epoch,
                                                      never repeated by one run: under a "window" sequence_policy a receipt
                                                      presented after one signed 1,024 us later is refused; give --sequence
                                                      from a counter there), --block-reason for deny/escalate only
  verify FILE --anchors FILE [--audience URI] [--mode audit|enforce] [--at T]
       [--request FILE] [--response FILE] [--runtime-context FILE] [--org-id URI]
       [--seal FILE] [--no-freshness] [--now T]       a receipt, an envelope or a chain, offline
                                                      (--request/--response/--runtime-context: a receipt; --mode: a receipt or
                                                      an envelope, --at with audit mode; --seal, --no-freshness: a chain, --at with
                                                      --no-freshness); offline, --mode enforce claims the nonce in this run's memory
                                                      only: its nonce_consumed guards nothing after it, and a second run accepts again;
                                                      a receipt or envelope call that names no mode is judged in audit mode here
                                                      (decision audit), where the service's default is enforce (accept or reject)
  verify --lines CALLS.jsonl --anchors FILE [--now T] [--org-id URI]
                                                      one verification call per line, in order, in one offline world;
                                                      a line that names no mode is judged as the service would, in enforce
                                                      mode (a nonce seen on an earlier line is REPLAY_DETECTED), unlike
                                                      verify FILE; stdout has one compact answer a line ({status, ...}), with or without
                                                      --json; exit 0 only when every call is valid (a file with none: exit 2)
  replay BUNDLE [--out FILE] [--expect DIGEST]        an EC-Agent bundle replay report (--expect pins the outer digest)
  manifest verify FILE --anchors FILE [--now T] [--skew S]
                                                      a capability manifest's signature, key, profiles_digest and window, offline
  anchors pin FILE|-   anchors revoke --issuer URI (--kid KID | --fingerprint HEX)   anchors show ISSUER
  relying-parties add NAME --audience URI [--audience URI ...] [--token TOKEN]
  relying-parties rotate NAME [--token TOKEN]         a new token for the party, its records kept; the old one refused
       [--url URL] [--admin-token TOKEN] [--timeout MS] [--insecure-http]
                                                      against a running instance (COUNTERSIGN_URL, COUNTERSIGN_ADMIN_TOKEN);
                                                      an http:// URL other than localhost, 127.0.0.0/8 or [::1] is refused (exit 2)
                                                      when a token would cross it, unless --insecure-http;
                                                      unreachable, timed out, 5xx, a redirect (none is followed), a 2xx
                                                      that is not a JSON object or an answer over 8 MiB: a reject with
                                                      VERIFIER_UNAVAILABLE, exit 1

Every command takes --json (one compact JSON document on stdout; a usage error, exit 2, writes
nothing on stdout: a bad flag or input is one line on stderr, no command or an unknown one prints
this usage there) and --help.
Exit: 0 valid/done, 1 invalid/refused, 2 usage (bad flags, unreadable input, an output path that cannot be written).
A reader that closes stdout early (| head -1) changes no exit code, except for relying-parties add
and rotate, whose token is shown once: exit 1, and the token is lost; relying-parties rotate NAME
gives the party a new one (add again is 409 RELYING_PARTY_EXISTS: the party was registered).
`;

const common = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

function parse<T extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: T, positionals = 0) {
  let parsed;
  const all: NonNullable<ParseArgsConfig["options"]> = { ...common, ...options };
  try {
    parsed = parseArgs({ args, options: { ...common, ...options }, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  // A value option given twice kept its last value and dropped the first without a word
  // (`--anchors a.json --anchors b.json` trusted b alone, `--mode enforce --mode audit` audited).
  const seen = new Set<string>();
  for (const t of parsed.tokens ?? []) {
    if (t.kind !== "option" || all[t.name]?.type !== "string" || all[t.name]?.multiple) continue;
    if (seen.has(t.name)) throw new UsageError(`--${t.name} is given more than once`);
    seen.add(t.name);
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`unexpected argument ${parsed.positionals[positionals]}`);
  return parsed;
}

function readText(io: Io, path: string, what: string): string {
  try {
    return io.read(path);
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function parseJson(text: string, path: string, what: string, maxDepth = DEFAULT_MAX_DEPTH): unknown {
  try {
    return parseStrictJson(text, maxDepth);
  } catch (err) {
    throw new UsageError(`${what} ${path} is not strict JSON: ${(err as Error).message}`);
  }
}

function readJson(io: Io, path: string, what: string): unknown {
  return parseJson(readText(io, path, what), path, what);
}

const need = (value: string | undefined, flag: string): string => {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required`);
  return value;
};

/**
 * Standard input ("-") read by one input at most: the first to read it took it all and the next
 * read nothing, so `verify - --anchors -` answered the call as a malformed anchors file and
 * `sign --command - --response -` "response - is not strict JSON".
 */
function oneStdin(inputs: [string, string | undefined][]): void {
  const from = inputs.filter(([, path]) => path === "-").map(([what]) => what);
  if (from.length > 1) throw new UsageError(`standard input (-) is read once: ${from.join(" and ")} cannot both be -`);
}

/** A decimal number as JSON writes one (`30`, `2.5`, `1e2`); `Number()` alone would also take `0x10`, `0b1`, ` 7 ` and `Infinity`. */
const DECIMAL = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

const number = (value: string | undefined, flag: string, fallback: number): number => {
  if (value === undefined) return fallback;
  const n = DECIMAL.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new UsageError(`${flag} must be a decimal number`);
  return n;
};

/**
 * A number that goes into a JSON document the service reads (a receipt's max_clock_skew, a call's
 * `at`): strict JSON refuses an integer outside ±(2^53−1), and every double that large is an integer.
 */
const jsonNumber = (value: string | undefined, flag: string, fallback: number): number => {
  const n = number(value, flag, fallback);
  if (Math.abs(n) > Number.MAX_SAFE_INTEGER) throw new UsageError(`${flag} must be at most 2^53-1 in magnitude (the service refuses a larger number)`);
  return n;
};

/** An issuer, audience or organisation as a receipt or anchor may name it (the service's own test). */
const httpsUri = (value: string, flag: string): string => {
  if (!isHttpsUri(value)) throw new UsageError(`${flag} must be an https:// URI with a host, of at most ${MAX_URI_BYTES} UTF-8 bytes, without whitespace or control characters`);
  return value;
};

function emit(io: Io, json: boolean, doc: unknown, summary?: string) {
  io.out(json ? JSON.stringify(doc) + "\n" : JSON.stringify(doc, null, 2) + "\n");
  if (!json && summary) io.err(summary + "\n");
}

async function keygen(io: Io, args: string[]): Promise<number> {
  const { values } = parse(args, { out: { type: "string" }, kid: { type: "string" }, issuer: { type: "string" }, force: { type: "boolean" } });
  const prefix = values.out ?? "countersign-key";
  if (prefix === "") throw new UsageError("--out must name a file prefix");
  // A path that ends in a directory (`.`, `..`, `keys/`) is no prefix: its files would be hidden
  // ones named .key and .pub.json inside it (`--out .` wrote ..key and ..pub.json).
  if (/(^|[\\/])\.{0,2}$/.test(prefix)) throw new UsageError(`--out must name a file prefix, not the directory ${prefix} (e.g. --out ${prefix.replace(/[\\/]+$/, "")}/my-issuer)`);
  if (values.issuer !== undefined) httpsUri(values.issuer, "--issuer");
  const kid = values.kid ?? `key-${new Date().toISOString().slice(0, 10)}`;
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(kid)) throw new UsageError("--kid must be 1-128 of [A-Za-z0-9._:-]");
  const keyFile = `${prefix}.key`;
  const pubFile = `${prefix}.pub.json`;
  const anchorFile = values.issuer === undefined ? null : `${prefix}.anchor.json`;
  for (const f of [keyFile, pubFile, anchorFile]) if (f && entryExists(f) && !values.force) throw new UsageError(`${f} exists; pass --force to overwrite`);
  // An anchor of the old key left beside a new one would pin, and verify against, the wrong key.
  const staleAnchor = `${prefix}.anchor.json`;
  if (anchorFile === null && entryExists(staleAnchor)) throw new UsageError(`${staleAnchor} exists and would no longer match the new key; pass --issuer to rewrite it, or remove it`);
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const publicKey = publicKeyFromSeed(seed);
  const entry = { kid, alg: "Ed25519", public_key: toBase64Url(publicKey), fingerprint: await sha256Hex(publicKey) };
  // With --issuer, also the anchor to pin (`anchors pin`) and to verify offline against (`verify --anchors`).
  // All the files or none: a path that cannot be written leaves no lone key behind.
  writeOutputs([
    { path: keyFile, text: toHex(seed) + "\n", mode: 0o600 },
    { path: pubFile, text: JSON.stringify(entry, null, 2) + "\n" },
    ...(anchorFile ? [{ path: anchorFile, text: JSON.stringify({ issuer: values.issuer, keys: [entry] }, null, 2) + "\n" }] : []),
  ]);
  const files = [keyFile, pubFile, ...(anchorFile ? [anchorFile] : [])];
  emit(io, values.json === true, { ...entry, key_file: keyFile, public_file: pubFile, ...(anchorFile ? { anchor_file: anchorFile } : {}) }, `wrote ${files.join(", ")} (${keyFile} is secret, 0600); fingerprint ${entry.fingerprint.slice(0, 16)}`);
  return 0;
}

let lastSequence = 0;

/**
 * sign's default sequence: microseconds since the epoch, above the last this process gave. It was
 * Date.now(), so two receipts signed in one millisecond (a loop over `main`, parallel runs) shared
 * a sequence, and the service refuses the second as REPLAY_DETECTED ("sequence … was already
 * presented"). Still increasing with time (a "window" policy's order), and below 2^53 until 2255.
 */
function nextSequence(): number {
  const micros = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  lastSequence = Math.max(micros, lastSequence + 1);
  return lastSequence;
}

function readSeed(io: Io, path: string): Uint8Array {
  let text: string;
  try {
    text = io.read(path).trim();
  } catch (err) {
    throw new UsageError(`cannot read key ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const seed = /^[0-9a-f]{64}$/.test(text) ? fromHex(text) : null;
  if (!seed) throw new UsageError(`${path} must hold a 32-byte Ed25519 seed as 64 lowercase hex (what keygen writes)`);
  return seed;
}

async function sign(io: Io, args: string[]): Promise<number> {
  const { values } = parse(args, {
    key: { type: "string" }, command: { type: "string" }, issuer: { type: "string" }, audience: { type: "string" },
    verdict: { type: "string" }, "block-reason": { type: "string" }, lifetime: { type: "string" }, skew: { type: "string" },
    sequence: { type: "string" }, response: { type: "string" }, "runtime-context": { type: "string" }, call: { type: "boolean" },
  });
  // Every flag judged up front as the service will judge the receipt: sign never emits one it refuses.
  const issuer = httpsUri(need(values.issuer, "--issuer"), "--issuer");
  const audience = httpsUri(need(values.audience, "--audience"), "--audience");
  const verdict = (values.verdict ?? "allow") as Verdict;
  if (!["allow", "deny", "escalate"].includes(verdict)) throw new UsageError("--verdict must be allow, deny or escalate");
  const blockReason = values["block-reason"];
  if (blockReason !== undefined && verdict === "allow") throw new UsageError("--block-reason is for a deny or escalate verdict (an allow receipt's block_reason is empty)");
  if (blockReason !== undefined && blockReason.trim() === "") throw new UsageError("--block-reason must not be empty");
  const now = Math.floor(Date.now() / 1000);
  const maxLifetime = DEFAULT_FRESHNESS.maxLifetime;
  const lifetime = number(values.lifetime, "--lifetime", 60);
  if (!(lifetime > 0 && lifetime <= maxLifetime && now + lifetime > now)) {
    throw new UsageError(`--lifetime must be above 0 and at most ${maxLifetime} seconds (the service's maximum receipt lifetime)`);
  }
  const skew = jsonNumber(values.skew, "--skew", 30);
  if (skew < 0) throw new UsageError("--skew must be a number of seconds >= 0");
  let sequence = nextSequence();
  if (values.sequence !== undefined) {
    sequence = /^[0-9]+$/.test(values.sequence) ? Number(values.sequence) : NaN;
    if (!Number.isSafeInteger(sequence)) throw new UsageError("--sequence must be an integer in 0..2^53-1 (decimal digits)");
  }
  oneStdin([["--key", values.key], ["--command", values.command], ["--response", values.response], ["--runtime-context", values["runtime-context"]]]);
  const seed = readSeed(io, need(values.key, "--key"));
  const command = readJson(io, need(values.command, "--command"), "command");
  const problem = requestProblem(command);
  // intake_version is what a Command sent to POST /v1/intake carries beside the request; the
  // receipt binds the request alone, so that Command is refused here by name.
  const intakeHint = problem?.includes('"intake_version"') ? " (intake_version is sent to POST /v1/intake, never signed; sign takes the request, {agent_id, tool, params, timestamp, trace_id}: drop it)" : "";
  if (problem) throw new UsageError(`command: ${problem.replace(/^request/, "the Command")}${intakeHint}`);
  const request = command as PresentedRequest;
  const response = values.response === undefined ? undefined : readJson(io, values.response, "response");
  const runtimeContext = values["runtime-context"] === undefined ? undefined : readJson(io, values["runtime-context"], "runtime context");
  const receipt = signReceipt(
    await unsignedReceipt({
      request,
      issuer,
      audience,
      verdict,
      block_reason: blockReason,
      issued_at: now,
      lifetime,
      nonce: toHex(crypto.getRandomValues(new Uint8Array(16))),
      sequence,
      max_clock_skew: skew,
      rule_summary: `manual=${verdict}`,
      // No rule set judged this receipt: its configuration is the CLI's own, named as such.
      config_hash: await prefixedDigest(jcs({ signer: "countersign-cli", schema_version: "1.3" })),
      legacy_receipt: toHex(crypto.getRandomValues(new Uint8Array(16))),
      response,
      runtime_context: runtimeContext,
    }),
    seed,
  );
  // The verifier's step 0, as a last guard: whatever the flags above missed is refused here, not emitted.
  const parsed = parseReceipt(receipt);
  if (!parsed.ok) throw new UsageError(`the receipt would be refused: ${parsed.failures.map((f) => f.detail).join("; ")}`);
  const doc = values.call
    ? { receipt, audience: receipt.audience, request, ...(response === undefined ? {} : { response }), ...(runtimeContext === undefined ? {} : { runtime_context: runtimeContext }) }
    : receipt;
  // A call body is sent as it is: one over the verification route's cap would be refused whole
  // (413 REQUEST_TOO_LARGE), so it is not emitted. The size is that of the text written.
  if (values.call) {
    const bytes = new TextEncoder().encode(values.json ? JSON.stringify(doc) : JSON.stringify(doc, null, 2)).length;
    if (bytes > MAX_VERIFY_BODY) throw new UsageError(`the call body would be ${bytes} bytes; POST /v1/receipts/verify takes at most ${MAX_VERIFY_BODY} (413 REQUEST_TOO_LARGE)${values.json ? "" : "; --json writes it compact"}`);
  }
  emit(io, values.json === true, doc, `signed ${verdict} receipt for ${request.tool}, nonce ${receipt.nonce}, expires ${new Date(receipt.expires_at * 1000).toISOString()}`);
  return 0;
}

/** `bare`: the file held a receipt, envelope or chain alone, not a call body naming its own audience. */
type Subject = { path: string; body: Record<string, unknown>; bare?: true };

/** What a file holds: a verification call body, or a bare receipt, envelope or chain. */
function subjectOf(doc: unknown): Subject {
  if (!isJsonObject(doc)) throw new UsageError("the file to verify must hold a JSON object");
  // A bare receipt has a `receipt` field too (the legacy HMAC, a string): a call body's is an object.
  if (isJsonObject(doc.receipt)) return { path: "/v1/receipts/verify", body: { ...doc } };
  if ("envelope" in doc) return { path: "/v1/envelopes/verify", body: { ...doc } };
  if ("chain" in doc) return { path: "/v1/chains/verify", body: { ...doc } };
  if ("envelope_version" in doc) return { path: "/v1/envelopes/verify", body: { envelope: doc }, bare: true };
  if ("entries" in doc && "chain_id" in doc) return { path: "/v1/chains/verify", body: { chain: doc }, bare: true };
  if ("signature" in doc && "nonce" in doc) return { path: "/v1/receipts/verify", body: { receipt: doc }, bare: true };
  throw new UsageError("cannot tell what to verify: expected a receipt, an envelope, a chain, or a verification call body");
}

const audienceOf = (s: Subject): string | undefined => {
  const carried = s.path === "/v1/envelopes/verify" ? (s.body.envelope as Record<string, unknown> | undefined)?.original_receipt : s.body.receipt;
  return isJsonObject(carried) && typeof carried.audience === "string" ? carried.audience : undefined;
};

const VERIFY_OPTIONS = {
  anchors: { type: "string" }, audience: { type: "string" }, mode: { type: "string" }, at: { type: "string" }, now: { type: "string" },
  request: { type: "string" }, response: { type: "string" }, "runtime-context": { type: "string" }, "org-id": { type: "string" },
  seal: { type: "string" }, "no-freshness": { type: "boolean" }, lines: { type: "boolean" },
} as const;

/** The route a call body goes to, read leniently (a body the service will refuse still has a route). */
function routeOf(text: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return "/v1/receipts/verify";
  }
  return isJsonObject(doc) && "envelope" in doc ? "/v1/envelopes/verify" : isJsonObject(doc) && "chain" in doc ? "/v1/chains/verify" : "/v1/receipts/verify";
}

/** The audience a call body speaks for, read leniently like its route; null when there is none to register. */
function callAudience(text: string): string | null {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return null;
  }
  return isJsonObject(doc) && typeof doc.audience === "string" && isHttpsUri(doc.audience) ? doc.audience : null;
}

const outcome = (body: Record<string, unknown>) => {
  const valid = body.valid === true || body.chain_valid === true;
  const codes = ((body.failures as { code: string }[] | undefined) ?? []).map((f) => f.code);
  return { valid, text: `${valid ? "valid" : "INVALID"}${"decision" in body ? ` (decision ${String(body.decision)})` : ""}${codes.length ? `: ${codes.join(", ")}` : ""}` };
};

async function verify(io: Io, args: string[]): Promise<number> {
  const { values, positionals } = parse(args, VERIFY_OPTIONS, 1);
  const file = need(positionals[0], "the file to verify");
  // A flag value the service would refuse, or a flag the call at hand would not carry, is a usage error.
  if (values.mode !== undefined && values.mode !== "audit" && values.mode !== "enforce") throw new UsageError("--mode must be audit or enforce");
  if (values.audience !== undefined) httpsUri(values.audience, "--audience");
  if (values["org-id"] !== undefined) httpsUri(values["org-id"], "--org-id");
  const at = values.at === undefined ? undefined : jsonNumber(values.at, "--at", 0);
  const notWith = (flags: readonly (keyof typeof values)[], what: string) => {
    for (const f of flags) if (values[f] !== undefined) throw new UsageError(`--${f} does not apply to ${what}`);
  };
  // --audience too: each line is judged for the audience it names, so an --audience beside them
  // would be read as "judged for me" while checking nothing of the kind.
  if (values.lines) notWith(["audience", "mode", "at", "request", "response", "runtime-context", "seal", "no-freshness"], "--lines (each line is a complete call)");
  oneStdin([["the file to verify", file], ...(["anchors", "request", "response", "runtime-context", "seal"] as const).map((f): [string, string | undefined] => [`--${f}`, values[f]])]);
  const trust = readTrustFile(readJson(io, need(values.anchors, "--anchors"), "anchors file"));
  const fixed = values.now === undefined ? undefined : number(values.now, "--now", 0);
  const now = fixed === undefined ? undefined : () => fixed;
  if (values.lines) return verifyLines(io, file, values, trust, now);
  // Read as deep as the chain route reads a body (its hops' runtime contexts sit 3 levels deeper
  // than on the receipt route), then held to what the route it goes to reads: a chain document
  // the service verifies was refused here as nested deeper than 32.
  const input = readText(io, file, "input");
  const subject = subjectOf(parseJson(input, file, "input", CHAIN_VERIFY_BODY_DEPTH));
  const depth = subject.path !== "/v1/chains/verify" ? DEFAULT_MAX_DEPTH : subject.bare ? CHAIN_VERIFY_BODY_DEPTH - 1 : CHAIN_VERIFY_BODY_DEPTH;
  if (depth < CHAIN_VERIFY_BODY_DEPTH) parseJson(input, file, "input", depth);
  const chain = subject.path === "/v1/chains/verify";
  const body = subject.body;
  if (chain) notWith(["mode", "audience", "request", "response", "runtime-context"], "a chain");
  else notWith(["seal", "no-freshness"], "a receipt or an envelope (only to a chain)");
  if (subject.path === "/v1/envelopes/verify") notWith(["request", "response", "runtime-context"], "an envelope (only to a receipt)");
  if (!chain) {
    // A bare receipt or envelope speaks for the audience it names unless --audience says whose
    // check this is; a call body names its own, and one that names none is refused as the
    // service refuses it (400 MALFORMED_REQUEST), not completed from its receipt.
    body.audience = values.audience ?? (subject.bare ? audienceOf(subject) : body.audience);
    if (values.mode !== undefined) body.mode = values.mode;
    body.mode ??= "audit";
    for (const [flag, field] of [["request", "request"], ["response", "response"], ["runtime-context", "runtime_context"]] as const) {
      const path = values[flag];
      if (path !== undefined) body[field] = readJson(io, path, flag);
    }
    // The service refuses an enforce call without a request (400 MALFORMED_REQUEST), and so did
    // this run, as if the evidence were invalid (exit 1, "INVALID"); but when the enforce mode is
    // this command's own (a bare receipt, or --mode enforce) the call is this command's making:
    // what is missing is a flag, so it is a usage error that names it.
    if (subject.path === "/v1/receipts/verify" && body.mode === "enforce" && body.request === undefined && (subject.bare || values.mode === "enforce")) {
      throw new UsageError("--mode enforce judges a receipt against the request it was issued for: give it with --request FILE");
    }
  } else {
    if (values.seal !== undefined) body.seal = readJson(io, values.seal, "seal");
    if (values["no-freshness"]) body.check_freshness = false;
  }
  if (at !== undefined) {
    if (!chain && body.mode === "enforce") throw new UsageError("--at judges only an audit-mode call; this one is in enforce mode");
    if (chain && body.check_freshness !== false) throw new UsageError("--at judges a chain only with --no-freshness (archival audit)");
    body.at = at;
  }
  // Registered as `--lines` registers a line's (callAudience): only an audience a party could be
  // registered for. An http:// one made a party the service never has, so the call was judged
  // AUDIENCE_MISMATCH here but AUDIENCE_NOT_ALLOWED (403) by the service and by --lines.
  const audiences = typeof body.audience === "string" && isHttpsUri(body.audience) ? [body.audience] : [];
  const verifier = await offlineVerifier({ trust, audiences, orgId: values["org-id"], now, secrets: sharedSecretsOf(trust, io.env) });
  const answer = await verifier.post(subject.path, JSON.stringify(body));
  const { valid, text } = outcome(answer.body);
  emit(io, values.json === true, answer.body, chain ? `chain ${text}` : text);
  return valid ? 0 : 1;
}

/**
 * `--lines`: one complete verification call per line (JSON Lines), each sent as it is to its
 * route, in order, in one offline world (so a replay within the file is a replay). One answer per
 * line on stdout; exit 0 only when every call was judged valid.
 */
async function verifyLines(io: Io, file: string, values: { "org-id"?: string; json?: boolean }, trust: ReturnType<typeof readTrustFile>, now?: () => number): Promise<number> {
  let text: string;
  try {
    text = io.read(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const calls = text.split("\n").filter((line) => line.trim() !== "");
  // "Exit 0 only when every call was judged valid" must not hold of no call at all: an empty or
  // truncated export is not a file of valid calls.
  if (calls.length === 0) throw new UsageError(`${file} holds no calls (one verification call body a line)`);
  const audiences = new Set<string>();
  // Each call's own audience (read as JSON, not as compact text: a line may have spaces, and its
  // receipt names an audience too), so a mismatch is judged as it would be alone.
  for (const line of calls) {
    const audience = callAudience(line);
    if (audience) audiences.add(audience);
  }
  const verifier = await offlineVerifier({ trust, audiences: [...audiences], orgId: values["org-id"], now, secrets: sharedSecretsOf(trust, io.env) });
  let allValid = true;
  for (const [i, line] of calls.entries()) {
    const answer = await verifier.post(routeOf(line), line, callAudience(line) ?? undefined);
    const { valid, text: summary } = outcome(answer.body);
    allValid &&= valid;
    io.out(JSON.stringify({ status: answer.status, ...answer.body }) + "\n");
    if (!values.json) io.err(`line ${i + 1}: ${summary}\n`);
  }
  return allValid ? 0 : 1;
}

async function replay(io: Io, args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { out: { type: "string" }, expect: { type: "string" } }, 1);
  if (values.expect !== undefined && !SHA256_REF.test(values.expect)) throw new UsageError('--expect takes the pinned outer bundle digest, "sha256:" + 64 lowercase hex');
  const file = need(positionals[0], "the bundle file");
  // "-" reads standard input, but as --out it wrote a file named "-", and nothing on stdout.
  if (values.out === "-") throw new UsageError("--out - would write a file named -: without --out the report goes to standard output");
  if (values.out !== undefined) refuseOverwritingInput(values.out, [file]);
  const report = await replayBundle(readJson(io, file, "bundle"), { expectedBundleDigest: values.expect ?? null });
  if (values.out !== undefined) writeOutputs([{ path: values.out, text: renderReport(report) }]);
  if (values.json) io.out(JSON.stringify(JSON.parse(renderReport(report))) + "\n");
  else if (values.out === undefined) io.out(renderReport(report));
  if (!values.json) io.err(replaySummary(report) + "\n");
  return report.decision === "match" ? 0 : 1;
}

const remoteOptions = { url: { type: "string" }, "admin-token": { type: "string" }, timeout: { type: "string" }, "insecure-http": { type: "boolean" } } as const;

/** Milliseconds a remote call may take before it is abandoned (and answered VERIFIER_UNAVAILABLE). */
const DEFAULT_REMOTE_TIMEOUT_MS = 10_000;
/**
 * The most bytes of an answer read from a remote instance. The admin API answers a few KiB (its
 * bodies are capped at 64 KiB); the whole answer was read into memory, so a server that streamed
 * without end grew the process by ~190 MB a second until the timeout.
 */
const MAX_REMOTE_ANSWER_BYTES = 8 * 1024 * 1024;

class AnswerTooLarge extends Error {}

/** A response's text, read up to `max` bytes: past them the read is cancelled and AnswerTooLarge thrown. */
async function boundedText(res: Response, max: number): Promise<string> {
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new AnswerTooLarge(`answered more than ${max} bytes`);
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, total));
}

/** The longest delay a timer (AbortSignal.timeout) takes, milliseconds. */
const MAX_TIMER_MS = 4_294_967_295;

/**
 * CCS 13.9: a remote call that could not be had (transport error, timeout, 5xx) is a deny-shaped
 * document, never a pass: decision reject, action block, VERIFIER_UNAVAILABLE. Exit 1.
 */
function unavailableDoc(status: number | null, detail: string) {
  return {
    status,
    valid: false,
    decision: "reject",
    failures: [{ code: "VERIFIER_UNAVAILABLE", severity: "CRITICAL", step: null, detail }],
    enforcement: { action: "block", verdict: null, outcome_status: null },
    error: { code: "VERIFIER_UNAVAILABLE", detail },
  };
}

async function admin(io: Io, values: { url?: string; "admin-token"?: string; timeout?: string; json?: boolean; "insecure-http"?: boolean }, method: string, path: string, body?: unknown): Promise<number> {
  const url = withoutTrailingSlashes(values.url ?? io.env.COUNTERSIGN_URL ?? "http://127.0.0.1:8787");
  const which = values.url !== undefined ? "--url" : "COUNTERSIGN_URL";
  // The URL parser drops spaces and control characters at either end (and tabs and line breaks
  // inside), so such a URL passed its check while the route appended to it as written did not:
  // 'http://host:8787 ' failed at fetch (answered VERIFIER_UNAVAILABLE) and 'http://host:8787/ '
  // called /%20/v1/... instead of the route.
  if (/[\x00-\x20\x7f]/.test(url)) throw new UsageError(`${which} must not contain spaces or control characters, not ${JSON.stringify(url)}`);
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    /* not a URL */
  }
  if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) throw new UsageError(`${which} must be an http:// or https:// URL, not ${JSON.stringify(url)}`);
  // The route's path is appended to the URL as written: after a query or a fragment it would be
  // part of that, and the call would go to another route. Credentials in it are refused by fetch
  // (and were echoed, in that failure's detail, on stdout).
  if (parsed.username !== "" || parsed.password !== "") throw new UsageError(`${which} must not carry credentials (the admin token goes in --admin-token or COUNTERSIGN_ADMIN_TOKEN)`);
  if (url.includes("?") || url.includes("#")) throw new UsageError(`${which} must not carry a query or a fragment (the command's route is appended to it)`);
  const token = values["admin-token"] ?? io.env.COUNTERSIGN_ADMIN_TOKEN;
  // What a header can carry as it is: fetch refuses a line break or a character above U+00FF,
  // and that refusal was answered VERIFIER_UNAVAILABLE, as if the service had been asked.
  if (token && !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(token)) {
    throw new UsageError(`${values["admin-token"] !== undefined ? "--admin-token" : "COUNTERSIGN_ADMIN_TOKEN"} must be printable ASCII, without a line break or leading or trailing spaces`);
  }
  // A token in clear over a network: the admin token (every command sends it when given), or a
  // relying party's token, supplied in the body or answered (relying-parties add and rotate).
  // Only loopback is taken as http:// without --insecure-http (any host was).
  const carriesToken = Boolean(token) || path.startsWith("/v1/admin/relying-parties");
  if (parsed.protocol === "http:" && carriesToken && !isLoopbackHost(parsed.hostname) && values["insecure-http"] !== true) {
    throw new UsageError(`${which} is http:// to ${parsed.hostname}, not loopback: the ${token ? "admin token" : "relying party's token"} would cross the network in clear; use https://, or pass --insecure-http`);
  }
  const timeoutMs = number(values.timeout, "--timeout", DEFAULT_REMOTE_TIMEOUT_MS);
  // A whole number: a timer takes no fraction of a millisecond (AbortSignal.timeout(0.5) throws,
  // and that throw was answered VERIFIER_UNAVAILABLE, exit 1, as if the service had been asked).
  if (!(Number.isInteger(timeoutMs) && timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS)) throw new UsageError(`--timeout must be above 0 and at most ${MAX_TIMER_MS} milliseconds, a whole number`);
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  let text: string;
  try {
    // No redirect is followed: fetch resent the body (a relying party's token among it) to whatever
    // origin a 307/308 named, http:// and any host included, and the answer of that origin was
    // reported as the service's. The admin API answers none.
    res = await io.fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
    text = await boundedText(res, MAX_REMOTE_ANSWER_BYTES);
  } catch (err) {
    const detail = err instanceof AnswerTooLarge ? `${url} ${err.message}: not an answer of the admin API` : `cannot reach ${url}: ${(err as Error).message}`;
    emit(io, values.json === true, unavailableDoc(null, detail), `${method} ${path}: VERIFIER_UNAVAILABLE (${detail})`);
    return 1;
  }
  if ((res.type as string) === "opaqueredirect" || (res.status >= 300 && res.status < 400)) {
    const location = res.headers.get("location");
    const detail = `${url} answered ${res.status || "a redirect"}${location ? ` to ${location}` : ""}; the CLI follows no redirect: give the service's own URL`;
    emit(io, values.json === true, unavailableDoc(res.status || null, detail), `${method} ${path}: VERIFIER_UNAVAILABLE (${detail})`);
    return 1;
  }
  if (res.status >= 500) {
    emit(io, values.json === true, unavailableDoc(res.status, `${url} answered ${res.status}`), `${method} ${path}: ${res.status}, VERIFIER_UNAVAILABLE`);
    return 1;
  }
  let doc: unknown = text;
  let isJson = true;
  try {
    doc = JSON.parse(text);
  } catch {
    isJson = false;
    /* an error that is not JSON: shown as text */
  }
  // A success that is not a JSON object is no answer of the admin API (every one is an object): a
  // proxy's login page or another program on the port. It was shown as text and exit 0, "done",
  // for a pin, revocation or registration that never reached the service (a bare
  // JSON value such as null or "ok").
  if (res.ok && !isJsonObject(doc)) {
    const detail = `${url} answered ${res.status} with a body that is not ${isJson ? "a JSON object" : "JSON"}: not the countersign admin API`;
    emit(io, values.json === true, unavailableDoc(res.status, detail), `${method} ${path}: VERIFIER_UNAVAILABLE (${detail})`);
    return 1;
  }
  // A 401 to a call that carried no token is what a newcomer who exported ADMIN_TOKEN (as the
  // README's tour does) meets: say where the CLI looks for the token, not only that it is missing.
  const hint = res.status === 401 && !token ? " (no admin token was sent: pass --admin-token or set COUNTERSIGN_ADMIN_TOKEN; ADMIN_TOKEN is not read)" : "";
  emit(io, values.json === true, doc, `${method} ${path}: ${res.status}${hint}`);
  return res.ok ? 0 : 1;
}

async function anchors(io: Io, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action === "pin") {
    const { values, positionals } = parse(rest, remoteOptions, 1);
    const file = need(positionals[0], "the anchor file (or -)");
    const anchor = readJson(io, file, "anchor");
    // keygen writes PREFIX.pub.json (one key entry) beside PREFIX.anchor.json: pinning the first
    // was answered 400 ANCHOR_INVALID with ten JSON Schema lines, none saying which file to give.
    if (isJsonObject(anchor) && !("issuer" in anchor) && !("keys" in anchor) && "kid" in anchor && "public_key" in anchor) {
      throw new UsageError(`${file} is one key entry (keygen's PREFIX.pub.json), not an anchor: pin PREFIX.anchor.json, which keygen --issuer URI writes, or {"issuer": URI, "keys": [that entry]}`);
    }
    return admin(io, values, "PUT", "/v1/admin/anchors", anchor);
  }
  if (action === "revoke") {
    const { values } = parse(rest, { ...remoteOptions, issuer: { type: "string" }, kid: { type: "string" }, fingerprint: { type: "string" } });
    if ((values.kid === undefined) === (values.fingerprint === undefined)) throw new UsageError("give exactly one of --kid and --fingerprint");
    httpsUri(need(values.issuer, "--issuer"), "--issuer");
    if (values.kid === "") throw new UsageError("--kid must not be empty");
    if (values.fingerprint !== undefined && !/^[0-9a-f]{64}$/.test(values.fingerprint)) throw new UsageError("--fingerprint must be 64 lowercase hex (SHA-256 of the raw key)");
    const key = values.kid !== undefined ? { kid: values.kid } : { fingerprint: values.fingerprint };
    return admin(io, values, "POST", "/v1/admin/anchors/revoke", { issuer: need(values.issuer, "--issuer"), ...key });
  }
  if (action === "show") {
    const { values, positionals } = parse(rest, remoteOptions, 1);
    return admin(io, values, "GET", `/v1/issuers/${encodeURIComponent(httpsUri(need(positionals[0], "the issuer"), "the issuer"))}`);
  }
  throw new UsageError("anchors takes pin, revoke or show");
}

async function relyingParties(io: Io, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action !== "add" && action !== "rotate") throw new UsageError("relying-parties takes add or rotate");
  const { values, positionals } = parse(rest, { ...remoteOptions, ...(action === "add" ? { audience: { type: "string", multiple: true } } : {}), token: { type: "string" } }, 1);
  const name = need(positionals[0], "the relying party's name");
  if (!RELYING_PARTY_NAME.test(name)) throw new UsageError(`the relying party's name must be ${RELYING_PARTY_NAME_RULE}`);
  if (values.token !== undefined && !RELYING_PARTY_TOKEN.test(values.token)) throw new UsageError("--token must be 32-256 of [A-Za-z0-9._~-]");
  const token = values.token !== undefined ? { token: values.token } : {};
  if (action === "rotate") return admin(io, values, "POST", `/v1/admin/relying-parties/${name}/token`, token);
  const body = { name, audiences: (values.audience as string[] | undefined) ?? [], ...token };
  if (body.audiences.length === 0) throw new UsageError("--audience is required (repeat it for several)");
  if (body.audiences.length > MAX_AUDIENCES_PER_PARTY) throw new UsageError(`at most ${MAX_AUDIENCES_PER_PARTY} --audience`);
  for (const a of body.audiences) httpsUri(a, "--audience");
  if (new Set(body.audiences).size !== body.audiences.length) throw new UsageError("--audience names one audience twice");
  return admin(io, values, "POST", "/v1/admin/relying-parties", body);
}

/**
 * `manifest verify`: pure code, nothing running. The anchors file is the trust file `verify`
 * takes; the manifest's verifier_id must be one of its issuers, and a key it lists as revoked
 * signs nothing.
 */
async function manifest(io: Io, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action !== "verify") throw new UsageError("manifest takes verify");
  const { values, positionals } = parse(rest, { anchors: { type: "string" }, now: { type: "string" }, skew: { type: "string" } }, 1);
  oneStdin([["the manifest file", positionals[0]], ["--anchors", values.anchors]]);
  const doc = readJson(io, need(positionals[0], "the manifest file (or -)"), "manifest");
  const trust = readTrustFile(readJson(io, need(values.anchors, "--anchors"), "anchors file"));
  const now = number(values.now, "--now", Date.now() / 1000);
  const skew = number(values.skew, "--skew", 30);
  if (skew < 0) throw new UsageError("--skew must be a number of seconds >= 0");
  const verifierId = isJsonObject(doc) && typeof doc.verifier_id === "string" ? doc.verifier_id : null;
  // The last anchor the file gives for the verifier: `verify` pins them in order, so a later one
  // replaces an earlier one's keys (a rotation) and only its keys are current, as on the service.
  const anchor = [...trust.anchors].reverse().find((a) => isJsonObject(a) && a.issuer === verifierId);
  let keys: ReturnType<typeof pinnedIssuer>["keys"] = [];
  if (anchor) {
    const built = await buildAnchorRecord(anchor, Math.floor(now));
    if (built.kind === "invalid") throw new UsageError(`anchors file: ${built.errors.join("; ")}`);
    const revoked = trust.revoked.filter((r) => r.issuer === verifierId);
    keys = pinnedIssuer(built.record).keys.filter((k) => !revoked.some((r) => r.kid === k.kid || r.fingerprint === k.fingerprint));
  }
  const check = await verifyManifest(doc, { keys, now, skew, verifier: nobleVerifier });
  const out = check.ok
    ? { valid: true, verifier_id: check.manifest.verifier_id, kid: check.kid, manifest_hash: check.manifestHash, profiles_digest: check.manifest.profiles_digest, expires_at: check.manifest.expires_at, profiles: check.manifest.profiles }
    : { valid: false, code: check.code, detail: check.detail };
  emit(io, values.json === true, out, check.ok ? `manifest valid: signed by ${check.kid}, ${check.manifest.profiles.length} profiles` : `manifest invalid: ${check.code}`);
  return check.ok ? 0 : 1;
}

const COMMANDS: Record<string, (io: Io, args: string[]) => Promise<number>> = {
  keygen, sign, verify, replay, anchors, "relying-parties": relyingParties, manifest,
};

/**
 * A message on one line: each run of whitespace holding a line break becomes one space, as the
 * global replace of `\s*\n\s*` by a space made it. That expression is tried at every position of a run of
 * whitespace without a line break and reads to the run's end each time: quadratic, and a message
 * can quote a file's text (a strict-JSON duplicate key), so a 300 KB file to verify held the CLI
 * 11 s. `\s+` takes each run whole, once.
 */
export const oneLine = (message: string): string => message.replace(/\s+/g, (run) => (run.includes("\n") ? " " : run));

/** The text without its trailing slashes, as `replace(/\/+$/, "")` gave it, by one scan from the end (that expression is quadratic in a run of slashes inside the text). */
export function withoutTrailingSlashes(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0x2f) end--;
  return text.slice(0, end);
}

/** Runs one command line; answers the exit code. Never throws. */
export async function main(argv: string[], io: Io = nodeIo): Promise<number> {
  const [command, ...args] = argv;
  // No command at all is a usage error: the usage goes to stderr, as every usage error's message
  // does, and stdout stays empty (a script reading the answer from stdout must not take the help for it).
  if (command === undefined) {
    io.err(USAGE);
    return 2;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    io.out(USAGE);
    return 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    io.err(`unknown command ${command}\n${USAGE}`);
    return 2;
  }
  // Only as an option: after "--" it names a file (`verify -- --help` printed the usage, exit 0).
  const end = args.indexOf("--");
  const options = end === -1 ? args : args.slice(0, end);
  if (options.includes("--help") || options.includes("-h")) {
    io.out(USAGE);
    return 0;
  }
  try {
    return await run(io, args);
  } catch (err) {
    if (err instanceof UsageError || err instanceof OutputError) {
      // One line, whatever wrote the message (Node's argument parser writes some in three).
      io.err(`countersign ${command}: ${oneLine(err.message)}\n`);
      return 2;
    }
    io.err(`countersign ${command}: unexpected failure: ${(err as Error).message}\n`);
    return 1;
  }
}

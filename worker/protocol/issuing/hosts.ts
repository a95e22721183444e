/**
 * SEC-001's structural host test: from the literal text of an absolute URL, without DNS,
 * decide whether its host is a loopback, private or link-local address. IPv4 is read the way
 * URL parsers and `inet_aton` read it (1 to 4 parts, each decimal, 0x-hex or 0-octal, the last
 * filling the remaining bytes), so `2130706433`, `0x7f.1` and `0177.0.0.1` are all 127.0.0.1.
 * IPv6 literals are expanded; IPv4-mapped, IPv4-compatible, SIIT IPv4-translated, 6to4 and
 * NAT64 (well-known and local-use prefixes, /96 form) forms are judged by the IPv4 address they
 * carry.
 *
 * A URL argument is read twice, and either reading can condemn it: literally (`scheme://`
 * authority, userinfo and port stripped) and as the WHATWG URL parser reads it (`new URL`, the
 * parser of browsers, workerd and Node), which also accepts `http:\\host`, `http:/host`,
 * `http:host`, a `\` ending the authority, leading C0 controls and tabs or newlines anywhere.
 * Hosts are NFKC-folded first, with every IDNA full stop taken as `.`, so fullwidth digits,
 * ideographic full stops and enclosed letters name the address they fold to.
 */
import { capCombiningRuns } from "./marks.js";

export type HostClass = "loopback" | "private" | "link-local" | "unspecified";

/** `scheme://` then an authority: the form of an absolute URL argument. */
const ABSOLUTE_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/;

/** Full stops IDNA treats as `.` (after NFKC, U+FF0E is already `.` and U+FF61 is U+3002). */
const IDNA_DOTS = /[\u3002\uff0e\uff61]/g;
/** What a URL parser ignores around a URL (C0 controls and space), plus other controls, format characters and separators. */
const NOISE = /^[\p{Cc}\p{Cf}\p{Z}\s]$/u;

/**
 * `text` without the noise (NOISE) at either end, read one code point at a time from each end.
 * The expression `/^[…]+|[…]+$/gu` did this, but its second branch was tried at every position
 * and ran to the end of every run of noise inside the text: `a`, 60,000 spaces and `a` took 1.6 s
 * a reading, and every argument is read three times (7.2 s an intake).
 */
export function trimEdges(text: string, edge: RegExp = NOISE): string {
  let start = 0;
  let end = text.length;
  const width = (i: number) => (text.codePointAt(i)! > 0xffff ? 2 : 1);
  while (start < end && edge.test(String.fromCodePoint(text.codePointAt(start)!))) start += width(start);
  while (end > start) {
    const at = end >= 2 && /[\udc00-\udfff]/.test(text[end - 1]) && /[\ud800-\udbff]/.test(text[end - 2]) ? end - 2 : end - 1;
    if (!edge.test(text.slice(at, end))) break;
    end = at;
  }
  return text.slice(start, end);
}

/**
 * A host or URL text as the rules compare it: NFKC, IDNA full stops as `.`, lowercase. A run of
 * combining marks is cut to the stream-safe bound first (marks.ts): intake refuses longer runs, but
 * percent-decoding makes them again (`%CC%81` × 10,000 in a URL took a fetch_url intake 0.93 s).
 */
export const foldHost = (text: string): string => capCombiningRuns(text).normalize("NFKC").replace(IDNA_DOTS, ".").toLowerCase();

/**
 * The host of an absolute URL (userinfo and port removed, percent-decoding applied), or null when
 * `text` is not one. An unbracketed host ends at the last `:` (`firstColon`: at the first, as
 * clients that split `host:port` at the first colon read `http://127.0.0.1:80:80/`).
 */
export function urlHost(text: string, firstColon = false): string | null {
  const m = ABSOLUTE_URL.exec(trimEdges(foldHost(text)).replace(/[\t\n\r]/g, ""));
  if (!m) return null;
  let authority = m[1];
  const at = authority.lastIndexOf("@");
  if (at >= 0) authority = authority.slice(at + 1);
  let host: string;
  if (authority.startsWith("[")) {
    const end = authority.indexOf("]");
    host = end < 0 ? authority.slice(1) : authority.slice(1, end);
  } else {
    const colon = firstColon ? authority.indexOf(":") : authority.lastIndexOf(":");
    host = colon >= 0 ? authority.slice(0, colon) : authority;
  }
  try {
    host = decodeURIComponent(host);
  } catch {
    /* not valid percent-encoding: judged as written */
  }
  return foldHost(host).replace(/\.$/, "");
}

/**
 * What the WHATWG URL parser needs to parse a text without a base: after leading C0 controls and
 * spaces, an ASCII letter and scheme characters (tabs and newlines anywhere are dropped) up to a
 * `:`. Any other text fails in its scheme state, so it is not handed to `new URL`, whose thrown
 * error was ~40% of an intake's CPU (every string argument is read for hosts).
 */
export const MAY_PARSE_AS_URL = /^[\x00-\x20]*[A-Za-z][A-Za-z0-9+.\-\t\n\r]*:/;

/**
 * The longest host (with its port) the WHATWG parser is given to read as a domain name when it
 * holds a character outside ASCII (or a percent-encoded byte past 0x7F): DNS names are at most 253
 * characters. The parser's IDNA step (Punycode, the ordering of combining marks) takes time
 * quadratic in such a host: `https://` and 21,700 distinct CJK letters (64 KB) took 0.6 s a read,
 * and SEC-001 reads a URL up to four times (2.1 s).
 */
export const MAX_IDNA_HOST = 256;
/**
 * The IDNA work one rule may hand the parser for one Command, counted as each such host's length
 * times its characters outside ASCII (Punycode's cost): ~15 ms. Hosts within MAX_IDNA_HOST are
 * cheap one by one, but 3,900 distinct 250-letter CJK hosts (a brace expansion's words) took 1 s.
 */
export const HOST_WORK = 1 << 23;

/** What is left of HOST_WORK for the URLs one rule reads in one Command. */
export interface HostWork {
  left: number;
}

/** A URL argument whose host the parser would read in quadratic time: not read, and SEC-001 denies (fail closed). */
export class HostTooLong extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HostTooLong";
  }
}

/** Schemes whose host the WHATWG parser reads as a domain name; any other keeps its host opaque (percent-encoded, linear). */
const SPECIAL_SCHEME = /^(?:https?|wss?|ftp|file)$/;
/** A character outside ASCII, or a percent-encoded byte past 0x7F (decoded into one before IDNA). */
const NON_ASCII = /[^\x00-\x7f]|%[89a-f][0-9a-f]/gi;

/**
 * The IDNA work the WHATWG parser would do on the host of `text` (a special scheme's): its length
 * times its characters outside ASCII, 0 for an ASCII host or another scheme, Infinity past
 * MAX_IDNA_HOST. The host is taken generously (from after the scheme's `:` and any slashes, after
 * the last `@`, to the first `/`, `\`, `?` or `#`, tabs and newlines dropped), so it is never
 * shorter than the one the parser reads.
 */
function idnaWork(text: string): number {
  const t = text.replace(/^[\x00-\x20]+/, "").replace(/[\t\n\r]/g, "");
  const colon = t.indexOf(":");
  if (colon < 0 || !SPECIAL_SCHEME.test(t.slice(0, colon).toLowerCase())) return 0;
  let authority = /^[/\\]*([^/\\?#]*)/.exec(t.slice(colon + 1))![1];
  authority = authority.slice(authority.lastIndexOf("@") + 1);
  if (!/[^\x00-\x7f]|%[89a-f][0-9a-f]/i.test(authority)) return 0;
  if (authority.length > MAX_IDNA_HOST) return Infinity;
  return authority.length * (authority.match(NON_ASCII)?.length ?? 0);
}

/**
 * The host the WHATWG URL parser extracts from `text`, or from `text` NFKC-folded with noise
 * trimmed from its ends, brackets removed; null when neither parses or the host is empty.
 * Throws HostTooLong for a host past MAX_IDNA_HOST, or past what is left of `work` (idnaWork).
 */
export function whatwgHosts(text: string, work: HostWork = { left: HOST_WORK }): string[] {
  const hosts = new Set<string>();
  for (const candidate of new Set([text, trimEdges(foldHost(text))])) {
    if (!MAY_PARSE_AS_URL.test(candidate)) continue;
    const cost = idnaWork(candidate);
    if (cost === Infinity) throw new HostTooLong(`a URL argument whose host holds characters outside ASCII and is longer than ${MAX_IDNA_HOST} characters: not read, refused`);
    work.left -= cost;
    if (work.left < 0) throw new HostTooLong(`URL arguments whose hosts outside ASCII pass ${HOST_WORK} units of IDNA work (a host's length times its characters outside ASCII) in one Command: not read, refused`);
    let hostname: string;
    try {
      hostname = new URL(candidate).hostname;
    } catch {
      continue;
    }
    if (hostname === "") continue;
    let host = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
    try {
      host = decodeURIComponent(host);
    } catch {
      /* not valid percent-encoding: judged as written */
    }
    hosts.add(foldHost(host).replace(/\.$/, ""));
  }
  return [...hosts];
}

/** Every host a URL argument can be read as naming: the literal reading and the WHATWG parser's. */
export function urlHosts(text: string, work?: HostWork): string[] {
  const literal = [urlHost(text), urlHost(text, true)].filter((h): h is string => h !== null);
  return [...new Set([...literal, ...whatwgHosts(text, work)])];
}

/** How an IPv4 address (as a 32-bit unsigned number) is classified, or null for a public one. */
function classifyV4(a: number): HostClass | null {
  const o = [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255];
  if (o[0] === 127) return "loopback";
  if (o[0] === 0) return "unspecified";
  // RFC 1918, and RFC 6598's shared address space 100.64.0.0/10: not globally reachable either, and
  // home of a cloud metadata service (Alibaba Cloud's 100.100.100.200).
  if (o[0] === 10 || (o[0] === 172 && o[1] >= 16 && o[1] <= 31) || (o[0] === 192 && o[1] === 168) || (o[0] === 100 && o[1] >= 64 && o[1] <= 127)) return "private";
  if (o[0] === 169 && o[1] === 254) return "link-local";
  return null;
}

function parseV4Part(part: string): number | null {
  if (part === "") return null;
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return parseInt(part, 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return null;
}

/** A host read as IPv4 in any of the forms URL parsers accept, or null when it is not one. */
export function parseIPv4(host: string): number | null {
  const parts = host.split(".");
  if (parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    const n = parseV4Part(p);
    if (n === null || !Number.isFinite(n)) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255) || last >= 256 ** (4 - nums.length)) return null;
  let value = last;
  nums.forEach((n, i) => (value += n * 256 ** (3 - i)));
  return value >>> 0;
}

/** The eight 16-bit groups of an IPv6 literal (zone id dropped), or null. */
export function parseIPv6(host: string): number[] | null {
  let text = host.split("%")[0];
  const groups: number[] = [];
  const dotted = /(?:^|:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let tail: number[] = [];
  if (dotted) {
    const v4 = parseIPv4(dotted[1]);
    if (v4 === null || !/^\d+\.\d+\.\d+\.\d+$/.test(dotted[1])) return null;
    tail = [v4 >>> 16, v4 & 0xffff];
    text = text.slice(0, text.length - dotted[1].length);
    if (text.endsWith(":") && !text.endsWith("::")) text = text.slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const read = (s: string) => (s === "" ? [] : s.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = read(halves[0]);
  const rest = halves.length === 2 ? read(halves[1]) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  const missing = 8 - head.length - rest.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  groups.push(...head, ...Array(halves.length === 2 ? missing : 0).fill(0), ...rest, ...tail);
  return groups.length === 8 ? groups : null;
}

function classifyV6(g: number[]): HostClass | null {
  const zeroFirst = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroFirst(7) && g[7] === 1) return "loopback";
  if (zeroFirst(8)) return "unspecified";
  const embedded = ((g[6] << 16) | g[7]) >>> 0;
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated), ::ffff:0:a.b.c.d (SIIT
  // IPv4-translated, RFC 7915), 64:ff9b::a.b.c.d (NAT64 well-known prefix, RFC 6052) and
  // 64:ff9b:1::a.b.c.d (NAT64 local-use prefix, RFC 8215, in its /96 form).
  if (zeroFirst(5) && g[5] === 0xffff) return classifyV4(embedded);
  if (zeroFirst(6)) return classifyV4(embedded);
  if (zeroFirst(4) && g[4] === 0xffff && g[5] === 0) return classifyV4(embedded);
  if (g[0] === 0x64 && g[1] === 0xff9b && (g[2] === 0 || g[2] === 1) && g[3] === 0 && g[4] === 0 && g[5] === 0) return classifyV4(embedded);
  // 2002:AABB:CCDD::/48 (6to4, RFC 3056) carries A.B.C.D in its second and third groups.
  if (g[0] === 0x2002) return classifyV4(((g[1] << 16) | g[2]) >>> 0);
  if ((g[0] & 0xffc0) === 0xfe80) return "link-local";
  if ((g[0] & 0xfe00) === 0xfc00 || (g[0] & 0xffc0) === 0xfec0) return "private";
  return null;
}

/** The class of a host that must not be reached, or null. `localhost` and `*.localhost` are loopback by definition (RFC 6761). */
export function classifyHost(raw: string): HostClass | null {
  const host = foldHost(raw).replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback";
  if (host.includes(":")) {
    const groups = parseIPv6(host);
    const cls = groups ? classifyV6(groups) : null;
    if (cls) return cls;
    // An embedded dotted quad with leading zeros read as decimal too (`::ffff:0127.0.0.1`), as classifyV4Decimal reads a bare one.
    const tail = /(^|:)(\d+\.\d+\.\d+\.\d+)$/.exec(host);
    if (!tail || !/(?:^|\.)0\d/.test(tail[2]) || tail[2].split(".").some((p) => Number(p) > 255)) return null;
    const decimal = parseIPv6(host.slice(0, tail.index + tail[1].length) + tail[2].split(".").map(Number).join("."));
    return decimal ? classifyV6(decimal) : null;
  }
  const v4 = parseIPv4(host);
  const cls = v4 === null ? null : classifyV4(v4);
  return cls ?? classifyV4Decimal(host);
}

/**
 * A dotted quad whose parts have leading zeros read as decimal, as parsers that refuse or ignore
 * octal do (Go's net.ParseIP before 1.17, Python's ipaddress before 3.9.5: CVE-2021-29921): URL
 * parsers read `0127.0.0.1` as octal, 87.0.0.1, and such a client as 127.0.0.1, so both readings
 * are judged.
 */
function classifyV4Decimal(host: string): HostClass | null {
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(host) || !/(?:^|\.)0\d/.test(host)) return null;
  const parts = host.split(".").map((p) => Number(p));
  if (parts.some((n) => n > 255)) return null;
  return classifyV4(((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0);
}

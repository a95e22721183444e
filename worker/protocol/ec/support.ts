/**
 * The support plane: does a cited span actually support the claim? Reported beside the
 * integrity decision and never changing it. Two predicates: the lexical one, and a
 * conflict-aware guard on top of it. Every intermediate field is exposed.
 */
import { domainDigest } from "./canonical.js";
import { casefold, codePoints, collapseWhitespace, tokens } from "./text.js";

export interface SupportConfig {
  /** |T(claim) ∩ T(span)| / |T(claim)| at or above this supports the claim. */
  threshold: number;
  /** Contradiction pairs: one member in the claim and the other in the span is a conflict. */
  pairs: [string, string][];
}

export const DEFAULT_PAIRS: [string, string][] = [
  ["red", "blue"], ["red", "green"], ["red", "yellow"], ["red", "black"], ["red", "white"],
  ["blue", "green"], ["blue", "yellow"], ["blue", "black"], ["blue", "white"],
  ["green", "yellow"], ["green", "black"], ["green", "white"],
  ["yellow", "black"], ["yellow", "white"], ["black", "white"],
  ["reliable", "unreliable"], ["after", "before"], ["reached", "left"], ["reached", "departed"],
  ["arrived", "left"], ["arrived", "departed"], ["chaired", "advised"], ["opened", "closed"],
];

export const DEFAULT_SUPPORT_CONFIG: SupportConfig = { threshold: 0.5, pairs: DEFAULT_PAIRS };

export type LexicalReason = "SUPPORT_LEXICAL_SUBSTRING" | "SUPPORT_LEXICAL_OVERLAP" | "SUPPORT_LEXICAL_NONE" | "SUPPORT_EMPTY";

export interface LexicalResult {
  supported: boolean;
  reason: LexicalReason;
  /** The whitespace-collapsed, lowercased claim is a substring of the likewise collapsed span. */
  substring: boolean;
  claim_tokens: string[];
  span_tokens: string[];
  shared_tokens: string[];
  /** |T(c) ∩ T(s)| / |T(c)|, or null when T(c) is empty. */
  overlap: number | null;
}

const normalise = (text: string) => collapseWhitespace(text).toLowerCase();

export function lexicalSupport(claim: string, span: string, threshold = DEFAULT_SUPPORT_CONFIG.threshold): LexicalResult {
  const tc = tokens(claim);
  const ts = tokens(span);
  const shared = [...tc].filter((t) => ts.has(t));
  const c = normalise(claim);
  const s = normalise(span);
  const base = { claim_tokens: [...tc].sort(), span_tokens: [...ts].sort(), shared_tokens: shared.sort() };
  if (c === "" || s === "" || tc.size === 0) return { supported: false, reason: "SUPPORT_EMPTY", substring: false, ...base, overlap: tc.size ? shared.length / tc.size : null };
  const substring = s.includes(c);
  const overlap = shared.length / tc.size;
  const supported = substring || overlap >= threshold;
  return { supported, reason: substring ? "SUPPORT_LEXICAL_SUBSTRING" : supported ? "SUPPORT_LEXICAL_OVERLAP" : "SUPPORT_LEXICAL_NONE", substring, ...base, overlap };
}

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const TEMPORAL = new Map<string, string>([
  ...MONTHS.map((m) => [m, m] as [string, string]),
  ...MONTHS.map((m) => [m.slice(0, 3), m] as [string, string]),
  ["sept", "september"],
  ...WEEKDAYS.map((d) => [d, d] as [string, string]),
  ...WEEKDAYS.map((d) => [d.slice(0, 3), d] as [string, string]),
]);

export interface Atoms {
  numbers: string[];
  entities: string[];
  temporal: string[];
}

/**
 * Numbers (thousands separators removed), temporal atoms (capitalised month and weekday names,
 * four-digit years) and entities (capitalised words that do not open a sentence), case-folded.
 */
export function atoms(text: string): Atoms {
  const numbers = new Set<string>();
  const temporal = new Set<string>();
  const entities = new Set<string>();
  for (const m of text.matchAll(/\p{Nd}+(?:[.,]\p{Nd}+)*/gu)) {
    const n = m[0].replace(/,(?=\p{Nd}{3}(?!\p{Nd}))/gu, "");
    numbers.add(n);
    if (/^[12]\d{3}$/.test(n)) temporal.add(n);
  }
  for (const m of text.matchAll(/[\p{L}\p{M}'’-]+/gu)) {
    const word = m[0];
    if (!/^\p{Lu}/u.test(word)) continue;
    const folded = casefold(word);
    // Month and weekday names count only capitalised, so "may" and "sun" stay ordinary words.
    const when = TEMPORAL.get(folded);
    if (when) {
      temporal.add(when);
      continue;
    }
    const before = text.slice(0, m.index).trimEnd();
    if (before !== "" && !/[.!?:]["'’”)]?$/u.test(before)) entities.add(folded);
  }
  return { numbers: [...numbers].sort(), entities: [...entities].sort(), temporal: [...temporal].sort() };
}

export type GuardReason = "GUARD_PASS" | "GUARD_LEXICAL_FAIL" | "GUARD_MISSING_ATOM" | "GUARD_CONFLICT";

export interface GuardResult {
  passed: boolean;
  reasons: GuardReason[];
  lexical: LexicalResult;
  claim_atoms: Atoms;
  span_atoms: Atoms;
  /** Claim atoms the span lacks, as `kind:value`. */
  missing_atoms: string[];
  /** Pairs with one member in the claim only and the other in the span only. */
  conflicts: [string, string][];
}

export function guardSupport(claim: string, span: string, config: SupportConfig = DEFAULT_SUPPORT_CONFIG): GuardResult {
  const lexical = lexicalSupport(claim, span, config.threshold);
  const ca = atoms(claim);
  const sa = atoms(span);
  const spanTokens = tokens(span);
  const claimTokens = tokens(claim);
  const missing = [
    ...ca.numbers.filter((n) => !sa.numbers.includes(n)).map((n) => `number:${n}`),
    ...ca.temporal.filter((t) => !sa.temporal.includes(t)).map((t) => `temporal:${t}`),
    ...ca.entities.filter((e) => [...tokens(e)].some((t) => !spanTokens.has(t))).map((e) => `entity:${e}`),
  ];
  const conflicts: [string, string][] = [];
  for (const [a, b] of config.pairs) {
    const onlyClaim = (x: string) => claimTokens.has(x) && !spanTokens.has(x);
    const onlySpan = (x: string) => spanTokens.has(x) && !claimTokens.has(x);
    if ((onlyClaim(a) && onlySpan(b)) || (onlyClaim(b) && onlySpan(a))) conflicts.push([a, b]);
  }
  const reasons: GuardReason[] = [];
  if (!lexical.supported) reasons.push("GUARD_LEXICAL_FAIL");
  if (missing.length) reasons.push("GUARD_MISSING_ATOM");
  if (conflicts.length) reasons.push("GUARD_CONFLICT");
  return { passed: reasons.length === 0, reasons: reasons.length ? reasons : ["GUARD_PASS"], lexical, claim_atoms: ca, span_atoms: sa, missing_atoms: missing, conflicts };
}

/** A digest of the support configuration: changing the threshold or the pair list changes it. */
export function supportConfigDigest(config: SupportConfig): Promise<string> {
  return domainDigest("countersign.ec-agent.support.v1", { min_token_code_points: 2, pairs: config.pairs, threshold: String(config.threshold), version: 1 });
}

/** Both predicates over every span; a claim is supported when any one span supports it. */
export async function evaluateSupport(claim: string, spans: string[], config: SupportConfig = DEFAULT_SUPPORT_CONFIG) {
  const perSpan = spans.map((span) => guardSupport(claim, span, config));
  return {
    lexical: { supported: perSpan.some((g) => g.lexical.supported), spans: perSpan.map((g) => g.lexical) },
    guard: { passed: perSpan.some((g) => g.passed), spans: perSpan.map(({ lexical: _l, ...rest }) => rest) },
    config: { threshold: config.threshold, pairs: config.pairs },
    config_digest: await supportConfigDigest(config),
    claim_code_points: codePoints(claim).length,
  };
}

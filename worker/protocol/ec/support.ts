/**
 * The support plane: does a cited span actually support the claim? Reported beside the
 * integrity decision and never changing it. Two predicates: the lexical one, and a
 * conflict-aware guard on top of it. Every intermediate field is exposed.
 */
import { DOMAINS, domainDigest } from "./canonical.js";
import { casefold, codePoints, collapseWhitespace, containsText, NORMALISER, tokens, TOKENISATION } from "./text.js";
import { claimWithin, EcLimitError, type EcLimits } from "./limits.js";

export interface SupportConfig {
  /** |T(claim) ∩ T(span)| / |T(claim)| at or above this supports the claim. */
  threshold: number;
  /** Contradiction pairs: one member (or an alias of it) in the claim and the other in the span is a conflict. */
  pairs: [string, string][];
  /** Surface forms that count as a pair member: member → aliases. */
  aliases: Record<string, string[]>;
}

export const DEFAULT_PAIRS: [string, string][] = [
  ["red", "blue"], ["red", "green"], ["red", "yellow"], ["red", "black"], ["red", "white"],
  ["blue", "green"], ["blue", "yellow"], ["blue", "black"], ["blue", "white"],
  ["green", "yellow"], ["green", "black"], ["green", "white"],
  ["yellow", "black"], ["yellow", "white"], ["black", "white"],
  ["reliable", "unreliable"], ["after", "before"], ["reached", "left"], ["reached", "departed"],
  ["arrived", "left"], ["arrived", "departed"], ["chaired", "advised"], ["opened", "closed"],
];

/** Polarity aliases: inflections and near-synonyms that stand for a pair member. */
export const DEFAULT_ALIASES: Record<string, string[]> = {
  opened: ["open", "opens", "opening", "reopened", "reopens"],
  closed: ["close", "closes", "closing", "shut", "shuts"],
  reached: ["reach", "reaches", "reaching"],
  arrived: ["arrive", "arrives", "arriving", "arrival"],
  departed: ["depart", "departs", "departing", "departure"],
  left: ["leave", "leaves", "leaving"],
  after: ["afterwards", "afterward"],
  before: ["beforehand", "prior"],
  chaired: ["chair", "chairs", "chairing", "presided"],
  advised: ["advise", "advises", "advising"],
  reliable: ["dependable"],
  unreliable: ["undependable"],
};

export const DEFAULT_SUPPORT_CONFIG: SupportConfig = { threshold: 0.5, pairs: DEFAULT_PAIRS, aliases: DEFAULT_ALIASES };

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

/** What the lexical predicate needs of a span, independent of the claim: computed once per span in a call. */
export interface PreparedSpan {
  tokens: Set<string>;
  sorted: string[];
  normalised: string;
}
export const prepareSpan = (span: string): PreparedSpan => {
  const ts = tokens(span);
  return { tokens: ts, sorted: [...ts].sort(), normalised: normalise(span) };
};

export function lexicalSupport(
  claim: string,
  span: string,
  threshold = DEFAULT_SUPPORT_CONFIG.threshold,
  prepared: PreparedSpan = prepareSpan(span),
  // The claim's side, prepared once when one claim is judged against many spans.
  preparedClaim: PreparedSpan = prepareSpan(claim),
): LexicalResult {
  const tc = preparedClaim.tokens;
  const ts = prepared.tokens;
  const shared = preparedClaim.sorted.filter((t) => ts.has(t));
  const c = preparedClaim.normalised;
  const s = prepared.normalised;
  // The prepared arrays themselves, not copies: an answer restating them per reference shares them.
  const base = { claim_tokens: preparedClaim.sorted, span_tokens: prepared.sorted, shared_tokens: shared };
  if (c === "" || s === "" || tc.size === 0 || ts.size === 0) return { supported: false, reason: "SUPPORT_EMPTY", substring: false, ...base, overlap: tc.size ? shared.length / tc.size : null };
  const substring = containsText(s, c);
  const overlap = shared.length / tc.size;
  const supported = substring || overlap >= threshold;
  return { supported, reason: substring ? "SUPPORT_LEXICAL_SUBSTRING" : supported ? "SUPPORT_LEXICAL_OVERLAP" : "SUPPORT_LEXICAL_NONE", substring, ...base, overlap };
}

// ---- atom extractors -------------------------------------------------------------------

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
/** A case-folded word → the month or weekday it names: the full name, or its first three letters ("sept" too). */
const byNameOrPrefix = (names: readonly string[]) => new Map(names.flatMap((full) => [[full, full], [full.slice(0, 3), full]] as [string, string][]));
const MONTH_OF = new Map([...byNameOrPrefix(MONTHS), ["sept", "september"]]);
const WEEKDAY_OF = byNameOrPrefix(WEEKDAYS);
/** Capitalised month names and abbreviations, as they open a date. */
const MONTH_NAME = "(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\\.?";
const monthNumber = (name: string) => {
  const month = MONTH_OF.get(casefold(name).replace(".", ""));
  return String(MONTHS.indexOf(month ?? "") + 1).padStart(2, "0");
};
const NUMBER_WORDS: Record<string, number> = {
  a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
  twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90, hundred: 100,
};
const TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
/** A count written as words, compounds included ("twenty-one", "ninety nine"), or undefined. */
const wordCount = (count: string): number | undefined => {
  const parts = casefold(count).split(/[\s-]+/);
  if (parts.length === 1) return NUMBER_WORDS[parts[0]];
  return parts.length === 2 && TENS.includes(parts[0]) && ONES.includes(parts[1]) ? NUMBER_WORDS[parts[0]] + NUMBER_WORDS[parts[1]] : undefined;
};
/** Unit → [ISO 8601 designator, multiplier, time part]. */
const UNITS: Record<string, [string, number, boolean]> = {
  minute: ["M", 1, true], hour: ["H", 1, true],
  day: ["D", 1, false], week: ["W", 1, false], month: ["M", 1, false], year: ["Y", 1, false], decade: ["Y", 10, false], century: ["Y", 100, false], centurie: ["Y", 100, false],
};
const FORWARD = ["later", "afterwards", "after"];
const BACKWARD = ["earlier", "ago", "before", "prior"];

const PATTERNS = {
  number: /\p{Nd}+(?:[.,]\p{Nd}+)*/gu,
  iso_date: /\b(\d{4})-(\d{2})-(\d{2})\b/g,
  day_month_year: new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)? (?:of )?(${MONTH_NAME}),? (\\d{4})\\b`, "g"),
  month_day_year: new RegExp(`\\b(${MONTH_NAME}) (\\d{1,2})(?:st|nd|rd|th)?,? (\\d{4})\\b`, "g"),
  month_year: new RegExp(`\\b(${MONTH_NAME}),? (\\d{4})\\b`, "g"),
  year: /(?<![\p{Nd},.])([12]\d{3})(?![\p{Nd}s]|,\d)/gu,
  decade: /\b([12]\d{2}0)s\b/g,
  // The count is a whole number: with its thousands separators ("1,250 days"), never the tail of
  // a decimal or of a separated number ("1.5 days" is no five days, "2,000 years" no zero years).
  duration: new RegExp(`(?:\\b(after|before|within|in)\\s+)?(?<!\\p{Nd}[.,])\\b(\\d{1,3}(?:,\\d{3})+|\\d+|(?:${TENS.join("|")})[\\s-](?:${ONES.join("|")})|${Object.keys(NUMBER_WORDS).join("|")})[\\s-]+(${Object.keys(UNITS).join("|")})s?\\b(?:\\s+(${[...FORWARD, ...BACKWARD].join("|")})\\b)?`, "giu"),
  word: /[\p{L}\p{M}'’-]+/gu,
  sentence_end: /[.!?:]["'’”)]?$/u,
};

/** Capitalised words at the start of a sentence that are function words, not entities. */
const SENTENCE_START_STOPWORDS = [
  "a", "an", "the", "it", "its", "in", "on", "at", "by", "for", "from", "of", "to", "with", "as", "and", "but", "or", "so", "if",
  "when", "while", "after", "before", "during", "since", "until", "then", "there", "here", "this", "that", "these", "those",
  "he", "she", "they", "we", "you", "his", "her", "their", "our", "my", "your", "every", "each", "all", "some", "no", "not",
  "one", "many", "most", "both", "what", "which", "who", "where", "why", "how", "once", "also", "still", "later", "earlier",
];

/**
 * The frozen extractors and rules, as data: they enter the configuration digest, so changing
 * an extractor, the normaliser or the tokenisation changes the digest.
 */
export const GUARD_MANIFEST = {
  extractors: {
    // Version 5: a span's absolute dates and spelled duration counts also state numbers (see dateStates, spelledCounts);
    // a claim's numbers written wholly inside an absolute date the span states are judged by that date (see datedNumbers).
    numeric: { version: 5, pattern: PATTERNS.number.source, thousands_separator: ",", span_date_components: "year, month and day of each date: atom, zero-padded", span_spelled_counts: "the count of each duration match written as a number word", claim_dated_numbers: "a claim's numbers wholly inside an iso_date, day_month_year, month_day_year or month_year match whose date: atom the span states are not judged as numbers" },
    temporal: {
      // Version 4: a span's absolute dates also state their month's name (see dateStates); a
      // duration's count may be a compound number word ("twenty-one"); a day may precede its month with "of".
      version: 4,
      span_date_month: "month:<name> for each date: atom with a month",
      months: MONTHS,
      weekdays: WEEKDAYS,
      number_words: NUMBER_WORDS,
      units: UNITS,
      forward: FORWARD,
      backward: BACKWARD,
      patterns: Object.fromEntries(["iso_date", "day_month_year", "month_day_year", "month_year", "year", "decade", "duration"].map((k) => [k, PATTERNS[k as keyof typeof PATTERNS].source])),
    },
    entity: { version: 2, word: PATTERNS.word.source, sentence_end: PATTERNS.sentence_end.source, sentence_start_stopwords: SENTENCE_START_STOPWORDS },
  },
  normaliser: NORMALISER,
  tokenisation: TOKENISATION,
};
export type GuardManifest = typeof GUARD_MANIFEST;

export interface Atoms {
  numbers: string[];
  entities: string[];
  /** `year:1923`, `date:1923-03`, `date:1923-03-12`, `date:--03-12`, `month:march`, `weekday:tuesday`, `decade:1990s`, `duration:P4D`, `relative:+P2Y`. */
  temporal: string[];
}

/** A duration as ISO 8601: `P4D`, `P10Y`, `PT2H`. */
function isoDuration(count: string, unit: string): string | null {
  const n = /^\d[\d,]*$/.test(count) ? Number(count.replace(/,/g, "")) : wordCount(count);
  const u = UNITS[casefold(unit).replace(/s$/, "")] ?? UNITS[casefold(unit)];
  if (n === undefined || !u) return null;
  return `P${u[2] ? "T" : ""}${n * u[1]}${u[0]}`;
}

/** A duration match's atom: `relative:±P…` with a direction, else `duration:P…`; null when it is no duration. */
function durationAtom(before: string | undefined, count: string, unit: string, after: string | undefined): string | null {
  const iso = isoDuration(count, unit);
  if (!iso) return null;
  const dir = (w: string | undefined) => (!w ? null : FORWARD.includes(casefold(w)) ? "+" : BACKWARD.includes(casefold(w)) ? "-" : null);
  // "four days later", "two years ago"; else "after four days", "before two weeks"; else a plain duration.
  const direction = dir(after) ?? dir(before);
  return direction ? `relative:${direction}${iso}` : `duration:${iso}`;
}

/** An absolute date as a text writes it: where, and its year, month (two digits) and day (when written). */
interface WrittenDate {
  start: number;
  end: number;
  year: string;
  month: string;
  day?: string;
}
/** Each absolute date form, and how its match names the year, month and day. */
const DATE_FORMS: [RegExp, (m: RegExpMatchArray) => [string, string, string?]][] = [
  [PATTERNS.iso_date, (m) => [m[1], m[2], m[3]]],
  [PATTERNS.day_month_year, (m) => [m[3], monthNumber(m[2]), m[1]]],
  [PATTERNS.month_day_year, (m) => [m[3], monthNumber(m[1]), m[2]]],
  [PATTERNS.month_year, (m) => [m[2], monthNumber(m[1])]],
];
/** A text's absolute dates, one list a form, each in text order. */
const writtenDates = (text: string): WrittenDate[][] =>
  DATE_FORMS.map(([pattern, parts]) =>
    [...text.matchAll(pattern)].map((m) => {
      const [year, month, day] = parts(m);
      return { start: m.index!, end: m.index! + m[0].length, year, month, ...(day ? { day } : {}) };
    }),
  );
/** A date's most precise atom: `date:YYYY-MM-DD`, or `date:YYYY-MM` when no day is written. */
const dateAtom = (d: WrittenDate): string => `date:${d.year}-${d.month}${d.day ? `-${d.day.padStart(2, "0")}` : ""}`;

/** The temporal atoms of a text: absolute dates, years, months, weekdays, decades, durations and relative expressions with their direction. */
export function temporalAtoms(text: string): string[] {
  const out = new Set<string>();
  for (const form of writtenDates(text)) {
    for (const d of form) {
      out.add(`year:${d.year}`);
      out.add(`date:${d.year}-${d.month}`);
      if (d.day) out.add(dateAtom(d));
    }
  }
  for (const [, y] of text.matchAll(PATTERNS.year)) out.add(`year:${y}`);
  for (const [, d] of text.matchAll(PATTERNS.decade)) out.add(`decade:${d}s`);
  for (const m of text.matchAll(PATTERNS.word)) {
    if (!capitalised(m[0])) continue;
    const w = casefold(m[0]);
    const month = MONTH_OF.get(w);
    if (month) out.add(`month:${month}`);
    const day = WEEKDAY_OF.get(w);
    if (day) out.add(`weekday:${day}`);
  }
  // A duration's atom depends on its four groups alone: one worked out is not worked out again.
  const durations = new Map<string, string | null>();
  for (const [, before, count, unit, after] of text.matchAll(PATTERNS.duration)) {
    const key = `${before ?? ""}\u0000${count}\u0000${unit}\u0000${after ?? ""}`;
    let atom = durations.get(key);
    if (atom === undefined) durations.set(key, (atom = durationAtom(before, count, unit, after)));
    if (atom) out.add(atom);
  }
  return [...out].sort();
}

/** Whether a word opens with an uppercase letter (\p{Lu}): an ASCII first character without the regular expression. */
const UPPER_START = /^\p{Lu}/u;
function capitalised(word: string): boolean {
  const c = word.charCodeAt(0);
  return c < 0x80 ? c >= 0x41 && c <= 0x5a : UPPER_START.test(word);
}

const STOPWORD_SET: ReadonlySet<string> = new Set(SENTENCE_START_STOPWORDS);

/** Whether a case-folded word names a month or a weekday. */
const isTemporalWord = (folded: string) => MONTH_OF.has(folded) || WEEKDAY_OF.has(folded);

/**
 * Whether the word at `index` opens a sentence: only whitespace before it, or the text before it
 * (trailing whitespace aside) ends as `PATTERNS.sentence_end` says. That pattern is anchored at
 * the end and spans at most two code units, so only those are tested: testing the whole prefix
 * at every word made long texts quadratic.
 */
export function opensSentence(text: string, index: number): boolean {
  let end = index;
  while (end > 0 && /\s/.test(text[end - 1])) end--;
  return end === 0 || PATTERNS.sentence_end.test(text.slice(Math.max(0, end - 2), end));
}

/** A number as an atom states it: thousands separators removed. */
const numberAtom = (n: string) => (n.includes(",") ? n.replace(/,(?=\p{Nd}{3}(?!\p{Nd}))/gu, "") : n);

/** A text's numbers, thousands separators removed. */
function numbersOf(text: string): Set<string> {
  const numbers = new Set<string>();
  // A number without a comma has no thousands separator to remove: no replace per number.
  for (const [n] of text.matchAll(PATTERNS.number)) numbers.add(numberAtom(n));
  return numbers;
}

/** A claim's absolute dates: each one's `date:` atom and the numbers written inside it. */
interface DatedNumbers {
  atom: string;
  numbers: Set<string>;
}

/**
 * What a claim's numbers are judged by: those written outside its absolute dates, and for each
 * date the numbers written inside it. A date's own digits ("1923-03-12", the 3 of "3 March 1923")
 * need no `number:` atom in the span once that date's atom is there; a number written beside it
 * ("3 floors on 12 March 1923") does, and so does one a date only starts or ends inside ("1923,500",
 * "3.12 March 1923"): a number is a date's only when the date's match holds all of it.
 */
function datedNumbers(text: string): { outside: Set<string>; dated: DatedNumbers[] } {
  // Each form's dates, in text order and not overlapping one another.
  const kinds = writtenDates(text).map((dates) => dates.map((d) => ({ start: d.start, end: d.end, atom: dateAtom(d), numbers: new Set<string>() })));
  const next = kinds.map(() => 0);
  const outside = new Set<string>();
  // The numbers come in text order too, so each pattern's matches are walked once.
  for (const m of text.matchAll(PATTERNS.number)) {
    const start = m.index!;
    const end = start + m[0].length;
    let inside = false;
    kinds.forEach((dates, k) => {
      while (next[k] < dates.length && dates[next[k]].end <= start) next[k]++;
      const date = dates[next[k]];
      if (date && date.start <= start && end <= date.end) {
        date.numbers.add(numberAtom(m[0]));
        inside = true;
      }
    });
    if (!inside) outside.add(numberAtom(m[0]));
  }
  return { outside, dated: kinds.flat() };
}

/**
 * Numbers (thousands separators removed), temporal atoms, and entities: capitalised words,
 * case-folded, including at the start of a sentence unless they are a function word there.
 */
export function atoms(text: string): Atoms {
  const numbers = numbersOf(text);
  const entities = new Set<string>();
  for (const m of text.matchAll(PATTERNS.word)) {
    const word = m[0];
    if (!capitalised(word)) continue;
    const folded = casefold(word);
    if (isTemporalWord(folded)) continue;
    // Only a function word is left out at a sentence start, so only then is the start looked for.
    if (STOPWORD_SET.has(folded) && opensSentence(text, m.index ?? 0)) continue;
    entities.add(folded);
  }
  return { numbers: [...numbers].sort(), entities: [...entities].sort(), temporal: temporalAtoms(text) };
}

/**
 * What a text's absolute dates state, from its `date:` atoms: as numbers, the year, month and day
 * as the ISO form writes them (zero-padded); as a temporal atom, the month's name. "12 March 1923"
 * states 03 as much as "1923-03-12" states March. A claim's own date is judged by its date atom
 * (datedNumbers), so its digits need not be here; a number written outside a date is not stated
 * by a span's date unless written there: "12 March 1923" states no count of 3.
 */
function dateStates(temporal: string[]): { numbers: string[]; temporal: string[] } {
  const out = { numbers: [] as string[], temporal: [] as string[] };
  for (const atom of temporal) {
    if (!atom.startsWith("date:")) continue;
    const [year, ...rest] = atom.slice("date:".length).split("-");
    out.numbers.push(year);
    out.numbers.push(...rest);
    const month = rest.length > 0 ? MONTHS[Number(rest[0]) - 1] : undefined;
    if (month) out.temporal.push(`month:${month}`);
  }
  return out;
}

/**
 * The counts a text's durations spell out as words, as numbers: "for eleven years" states 11 as
 * much as "for 11 years" does, and both are the atom `duration:P11Y`, so a claim writing the count
 * in digits is judged by that atom (which must match), not rejected for a missing `number:11`.
 */
function spelledCounts(text: string): string[] {
  const out: string[] = [];
  for (const [, , count] of text.matchAll(PATTERNS.duration)) {
    const n = wordCount(count);
    if (n !== undefined) out.push(String(n));
  }
  return out;
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
  /** Pairs with one member (or alias) in the claim and the other in the span. */
  conflicts: [string, string][];
}

/**
 * A configured pair member as the guard matches it: the member case-folded, when that is one
 * token as T(x) reads text (a run of word characters, at least two code points); else null, since
 * the member could never be found among a text's tokens ("x", "left behind", "co-op").
 */
export function pairMember(member: string): string | null {
  const folded = casefold(member);
  const toks = tokens(member);
  return toks.size === 1 && toks.has(folded) ? folded : null;
}

/** The pair members a token set mentions, through their aliases. */
function members(toks: Set<string>, config: SupportConfig): Set<string> {
  const found = new Set<string>();
  for (const [a, b] of config.pairs) {
    // An own alias list only: a member named like an object property ("constructor") has none.
    for (const m of [a, b]) if (toks.has(m) || (Object.hasOwn(config.aliases, m) ? config.aliases[m] : []).some((x) => toks.has(x))) found.add(m);
  }
  return found;
}

/** What the guard reads of a claim, whatever the span: worked out once when one claim meets many spans. */
export interface PreparedClaim {
  lexical: PreparedSpan;
  atoms: Atoms;
  /** Each entity atom's tokens. */
  entityTokens: [string, string[]][];
  /** The pair members the claim mentions. */
  members: Set<string>;
  /** The claim's numbers outside its absolute dates, and those inside each date. */
  numbers: { outside: Set<string>; dated: DatedNumbers[] };
}

export function prepareClaim(claim: string, config: SupportConfig = DEFAULT_SUPPORT_CONFIG): PreparedClaim {
  const lexical = prepareSpan(claim);
  const ca = atoms(claim);
  return { lexical, atoms: ca, entityTokens: ca.entities.map((e) => [e, [...tokens(e)]]), members: members(lexical.tokens, config), numbers: datedNumbers(claim) };
}

export function guardSupport(claim: string, span: string, config: SupportConfig = DEFAULT_SUPPORT_CONFIG, prepared: PreparedClaim = prepareClaim(claim, config)): GuardResult {
  const spanPrepared = prepareSpan(span);
  const lexical = lexicalSupport(claim, span, config.threshold, spanPrepared, prepared.lexical);
  const ca = prepared.atoms;
  const sa = atoms(span);
  const spanTokens = spanPrepared.tokens;
  // Sets, not Array.includes: a claim's atoms against a long span's would otherwise be their product.
  const stated = dateStates(sa.temporal);
  const spanNumbers = new Set([...sa.numbers, ...stated.numbers, ...spelledCounts(span)]);
  const spanTemporal = new Set([...sa.temporal, ...stated.temporal]);
  // A claim's number is judged unless every place it is written is a date the span states.
  const judged = new Set(prepared.numbers.outside);
  for (const d of prepared.numbers.dated) if (!spanTemporal.has(d.atom)) for (const n of d.numbers) judged.add(n);
  const missing = [
    ...ca.numbers.filter((n) => judged.has(n) && !spanNumbers.has(n)).map((n) => `number:${n}`),
    ...ca.temporal.filter((t) => !spanTemporal.has(t)).map((t) => `temporal:${t}`),
    ...prepared.entityTokens.filter(([, toks]) => toks.some((t) => !spanTokens.has(t))).map(([e]) => `entity:${e}`),
  ];
  const inClaim = prepared.members;
  const inSpan = members(spanTokens, config);
  const conflicts = config.pairs.filter(([a, b]) => (inClaim.has(a) && inSpan.has(b)) || (inClaim.has(b) && inSpan.has(a)));
  const reasons: GuardReason[] = [];
  if (!lexical.supported) reasons.push("GUARD_LEXICAL_FAIL");
  if (missing.length) reasons.push("GUARD_MISSING_ATOM");
  if (conflicts.length) reasons.push("GUARD_CONFLICT");
  return { passed: reasons.length === 0, reasons: reasons.length ? reasons : ["GUARD_PASS"], lexical, claim_atoms: ca, span_atoms: sa, missing_atoms: missing, conflicts };
}

/**
 * A digest of everything the support plane's answer depends on: threshold, pairs, aliases,
 * the atom extractors, the normaliser and the tokenisation. Changing any of them changes it.
 */
export function supportConfigDigest(config: SupportConfig, manifest: GuardManifest = GUARD_MANIFEST): Promise<string> {
  // The defaults are frozen below, so their digest is computed once per isolate.
  if (config === DEFAULT_SUPPORT_CONFIG && manifest === GUARD_MANIFEST) return (defaultConfigDigest ??= configDigest(config, manifest));
  return configDigest(config, manifest);
}

const configDigest = (config: SupportConfig, manifest: GuardManifest): Promise<string> =>
  domainDigest(DOMAINS.support, { aliases: config.aliases, pairs: config.pairs, threshold: String(config.threshold), ...manifest });

let defaultConfigDigest: Promise<string> | undefined;

const deepFreeze = (v: unknown): void => {
  if (v === null || typeof v !== "object" || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const inner of Object.values(v)) deepFreeze(inner);
};
deepFreeze(DEFAULT_SUPPORT_CONFIG);
deepFreeze(GUARD_MANIFEST);

/** Both predicates over every span; a claim is supported when any one span supports it. */
export async function evaluateSupport(claim: string, spans: string[], config: SupportConfig = DEFAULT_SUPPORT_CONFIG, limits?: Pick<EcLimits, "claim_code_points" | "support_spans">) {
  if (limits) {
    if (spans.length > limits.support_spans) throw new EcLimitError("support_spans", `${spans.length} spans; at most ${limits.support_spans} are judged in one call`);
    claimWithin(claim, limits);
  }
  const prepared = prepareClaim(claim, config);
  const perSpan = spans.map((span) => guardSupport(claim, span, config, prepared));
  return {
    lexical: { supported: perSpan.some((g) => g.lexical.supported), spans: perSpan.map((g) => g.lexical) },
    guard: { passed: perSpan.some((g) => g.passed), spans: perSpan.map(({ lexical: _l, ...rest }) => rest) },
    config: { threshold: config.threshold, pairs: config.pairs, aliases: config.aliases },
    config_digest: await supportConfigDigest(config),
    claim_code_points: codePoints(claim).length,
  };
}

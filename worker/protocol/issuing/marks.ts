/**
 * Runs of combining marks. Unicode normalisation puts the marks after a base character in
 * canonical order, and the engine's reordering is quadratic in the length of one run: NFC or NFKC
 * of 120,000 marks in a row (240 KB) takes 5-7 s, of 40,000 about 0.6 s. Every combining class
 * other than 0 belongs to a mark (`\p{M}`), and only two other characters become one under NFKC
 * (halfwidth U+FF9E and U+FF9F, to U+3099 and U+309A, class 8: checked over all code points), so
 * a run of those bounds what reordering sorts. Without the two, 30 marks and a U+FF9E repeated
 * 4,100 times (256 KB) made one run under NFKC: 3.7 s.
 * UAX #15's Stream-Safe Text Format allows at most 30 non-starters in a row; no writing system
 * needs more, and text with more is noise (or an attack on the normaliser).
 */
export const MAX_COMBINING_RUN = 30;

/** A combining mark, or a character NFKC makes one. */
const MARK = "[\\p{M}\\uFF9E\\uFF9F]";
/** A run of more than MAX_COMBINING_RUN marks, tried only where a run starts (linear). */
const LONG_RUN = new RegExp(`(?<!${MARK})${MARK}{31}`, "u");
/** The marks of a run past its first MAX_COMBINING_RUN. */
const RUN_TAIL = new RegExp(`(?<!${MARK})(${MARK}{30})${MARK}+`, "gu");

/** Whether `text` holds more than MAX_COMBINING_RUN combining marks in a row. */
export const longCombiningRun = (text: string): boolean => LONG_RUN.test(text);

/** `text` with every run of combining marks cut to its first MAX_COMBINING_RUN (the rest dropped): safe to normalise. */
export const capCombiningRuns = (text: string): string => (LONG_RUN.test(text) ? text.replace(RUN_TAIL, "$1") : text);

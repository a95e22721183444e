/**
 * The guard's fast paths answer what the slow ones did: ASCII case folding by toLowerCase, and a
 * month or weekday found in a table of names and three-letter prefixes instead of a scan of both
 * lists per word. The slow forms are written out here as they were.
 */
import { describe, expect, it } from "vitest";
import { CASEFOLD_TABLE } from "../../worker/protocol/ec/casefold-table.js";
import { atoms, GUARD_MANIFEST, temporalAtoms } from "../../worker/protocol/ec/support.js";

const atomsWordPattern = GUARD_MANIFEST.extractors.entity.word;
import { casefold } from "../../worker/protocol/ec/text.js";

const FOLD = new Map(CASEFOLD_TABLE.split(";").map((e) => e.split("=")).map(([cp, f]) => [parseInt(cp, 16), String.fromCodePoint(...f.split(",").map((h) => parseInt(h, 16)))]));
const tableFold = (text: string) => Array.from(text, (ch) => FOLD.get(ch.codePointAt(0)!) ?? ch).join("");

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const scannedTemporal = (w: string) => MONTHS.some((m) => m === w || (w.length >= 3 && m.slice(0, 3) === w)) || w === "sept" || WEEKDAYS.some((d) => d === w || (w.length >= 3 && d.slice(0, 3) === w));

describe("EC text fast paths", () => {
  it("folds every ASCII character, and ASCII text, as the table does", () => {
    const all = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)).join("");
    expect(casefold(all)).toBe(tableFold(all));
    for (const text of ["Hello World", "MIXED case 123 !?", "Straße", "ΣΊΣΥΦΟΣ", "İstanbul", "ǅ", "A\u0130B"]) expect(casefold(text)).toBe(tableFold(text));
  });

  it("takes a capitalised word for a month or weekday exactly when the list scan did", () => {
    const words = [...MONTHS, ...WEEKDAYS].flatMap((w) => [w, w.slice(0, 2), w.slice(0, 3), w.slice(0, 4), w + "s", w.slice(1)]).concat(["sept", "septe", "ma", "m", "mayday", "sun", "sunny", "wed", "wedding"]);
    for (const w of words) {
      const capitalised = w.charAt(0).toUpperCase() + w.slice(1);
      const isEntity = atoms(`x ${capitalised} y`).entities.includes(w);
      expect(isEntity, w).toBe(!scannedTemporal(w));
      const found = temporalAtoms(`x ${capitalised} y`);
      const month = MONTHS.find((m) => m === w || (w.length >= 3 && m.slice(0, 3) === w) || (w === "sept" && m === "september"));
      const day = WEEKDAYS.find((d) => d === w || (w.length >= 3 && d.slice(0, 3) === w));
      expect(found.filter((a) => a.startsWith("month:") || a.startsWith("weekday:")), w).toEqual([...(month ? [`month:${month}`] : []), ...(day ? [`weekday:${day}`] : [])]);
    }
  });

  it("takes a word for capitalised exactly when /^\\p{Lu}/u does, for every first character (ASCII is judged without the expression)", () => {
    const firsts = Array.from({ length: 0x10000 }, (_, c) => c).filter((c) => c < 0xd800 || c > 0xdfff).map((c) => String.fromCharCode(c));
    firsts.push("\u{10400}", "\u{1D400}", "\u{1F600}", "\u{10428}");
    for (const ch of firsts) {
      const word = `${ch}b`;
      const whole = new RegExp(`^${atomsWordPattern}$`, "u").test(word);
      const expected = whole && /^\p{Lu}/u.test(word) ? [casefold(word)] : [];
      expect(atoms(`x ${word} y`).entities, JSON.stringify(ch)).toEqual(expected);
    }
  });

  it("removes thousands separators as before, the replace skipped only for numbers without a comma", () => {
    const text = "1,234 and 12,34 and 5.000,000 and 1,234,567.5 and 7 and 1,2345 and ١,٢٣٤";
    const before = [...new Set([...text.matchAll(/\p{Nd}+(?:[.,]\p{Nd}+)*/gu)].map((m) => m[0].replace(/,(?=\p{Nd}{3}(?!\p{Nd}))/gu, "")))].sort();
    expect(atoms(text).numbers).toEqual(before);
  });

  it("gives every duration its atom, a duration met again included", () => {
    const text = "two days later, then after two days, Two Days ago, 3 hours, 3 hours, in 4 weeks, within a decade, three centuries before, 2 days 2 days";
    expect(temporalAtoms(text).filter((a) => a.startsWith("duration:") || a.startsWith("relative:"))).toEqual(
      ["duration:P10Y", "duration:P2D", "duration:P4W", "duration:PT3H", "relative:+P2D", "relative:-P2D", "relative:-P300Y"].sort(),
    );
  });
});


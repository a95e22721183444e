/**
 * The guard's fast paths answer what the slow ones did: ASCII case folding by toLowerCase, and a
 * month or weekday found in a table of names and three-letter prefixes instead of a scan of both
 * lists per word. The slow forms are written out here as they were.
 */
import { describe, expect, it } from "vitest";
import { CASEFOLD_TABLE } from "../../worker/protocol/ec/casefold-table.js";
import { atoms, temporalAtoms } from "../../worker/protocol/ec/support.js";
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
});

/**
 * A Class B audit's date (CCS §9) past its YYYY-MM-DD form: a day of the proleptic Gregorian
 * calendar that has begun somewhere by `now`. The pin route answers ANCHOR_INVALID with this detail.
 */
import { describe, expect, it } from "vitest";
import { auditDateProblem } from "../../worker/protocol/conformance/verifier-class.js";

const now = Date.UTC(2026, 11, 2, 12) / 1000;

describe("auditDateProblem", () => {
  it("takes a past day, a leap day and a day of a year below 100 (read as that year, not 19xx)", () => {
    for (const date of ["2026-12-01", "2024-02-29", "0099-12-31", "0004-02-29", "0000-01-01"]) expect(auditDateProblem(date, now), date).toBeNull();
  });

  it("refuses a day the calendar does not have, a year below 100 included", () => {
    for (const date of ["2026-02-31", "2025-02-29", "0099-02-29", "2026-13-01", "2026-00-10", "2026-04-00"]) {
      expect(auditDateProblem(date, now), date).toMatch(/is not a day of the calendar/);
    }
  });

  it("refuses a day that has not begun anywhere (UTC+14 is the first to reach a day)", () => {
    expect(auditDateProblem("2026-12-03", now)).toBeNull(); // already 2026-12-03 at UTC+14 (12:00 UTC + 14 h)
    expect(auditDateProblem("2026-12-04", now)).toMatch(/in the future/);
    expect(auditDateProblem("2999-01-01", now)).toMatch(/in the future/);
  });
});

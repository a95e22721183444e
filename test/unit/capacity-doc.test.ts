/**
 * docs/capacity.md carries the committed bench run's figures in a generated block: the document
 * must say exactly what bench/results.json measured (`npm run bench:doc` rewrites the block).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CAPACITY_DOC, capacityWithFigures, EC_DOC, ecTimingWithFigures, RESULTS } from "../../bench/report.js";

describe("docs/capacity.md", () => {
  it("holds the figures of the committed bench/results.json, unedited", () => {
    const doc = readFileSync(CAPACITY_DOC, "utf8");
    const results = JSON.parse(readFileSync(RESULTS, "utf8"));
    expect(capacityWithFigures(doc, results)).toBe(doc);
  });

  it("docs/ec-receipts.md holds the same run's EC-Agent timings, unedited", () => {
    const doc = readFileSync(EC_DOC, "utf8");
    const results = JSON.parse(readFileSync(RESULTS, "utf8"));
    expect(ecTimingWithFigures(doc, results)).toBe(doc);
    const replay = results.ec_agent_paper_table.find((row: { case: string }) => row.case === "ec-replay-1");
    const edited = doc.replace(`| ${replay.ours_ms} | ${replay.paper_ms} |`, `| 0.001 | ${replay.paper_ms} |`);
    expect(edited).not.toBe(doc);
    expect(ecTimingWithFigures(edited, results)).not.toBe(edited);
  });

  it("notices a figure edited by hand", () => {
    const doc = readFileSync(CAPACITY_DOC, "utf8");
    const results = JSON.parse(readFileSync(RESULTS, "utf8"));
    const edited = doc.replace(`| full_over_raw | ${results.ratios.full_over_raw} |`, "| full_over_raw | 1 |");
    expect(edited).not.toBe(doc);
    expect(capacityWithFigures(edited, results)).not.toBe(edited);
  });
});

/**
 * The CLI's one-line error message and its URL's trailing slashes were read by expressions that
 * are quadratic in a run of whitespace (or slashes) inside the text; a file to verify can put such
 * a run in a message (a strict-JSON duplicate key is quoted), and a 300 KB one held the CLI 11 s.
 * Both are now read in linear time with the same result.
 */
import { describe, expect, it } from "vitest";
import { main, oneLine, withoutTrailingSlashes, type Io } from "../../cli/countersign.js";
import { seeded } from "../support/seeded.js";

const { text } = seeded(23);
const randomText = (alphabet: string[]) => text(alphabet, 12);

describe("the CLI reads its messages and URLs in linear time", () => {
  it("gives what the expressions they replace gave (60,000 seeded random texts each)", () => {
    const spaces = ["a", " ", "\t", "\n", "\r", "\u2028", "\u00a0", "\ufeff", "\v", "\ud800", "\u{1f600}"];
    const slashes = ["a", "/", "\\", "\n", ":"];
    for (let i = 0; i < 60_000; i++) {
      const t = randomText(spaces);
      expect(oneLine(t), JSON.stringify(t)).toBe(t.replace(/\s*\n\s*/g, " "));
      const u = randomText(slashes);
      expect(withoutTrailingSlashes(u), JSON.stringify(u)).toBe(u.replace(/\/+$/, ""));
    }
  });

  it("answers a file whose duplicate key is a long run of spaces at once (11 s for 150,000 before)", async () => {
    const key = " ".repeat(150_000);
    let err = "";
    const io: Io = { out: () => {}, err: (t) => void (err += t), read: (p) => (p === "anchors.json" ? "[]" : `{"${key}":1,"${key}":2}`), env: {}, fetch };
    expect(await main(["verify", "dup.json", "--anchors", "anchors.json"], io)).toBe(2);
    expect(err).toContain("is not strict JSON: duplicate key");
    expect(err.trimEnd().includes("\n")).toBe(false);
    expect(withoutTrailingSlashes("http://a" + "/".repeat(200_000) + "x")).toHaveLength(200_009);
  });
});

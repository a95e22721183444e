/**
 * The `Authorization: Bearer` parse every token check shares (worker/http.ts). The scheme is
 * matched without case, the token exactly; whitespace after the token is no part of it (RFC 9110
 * §5.5: a field value excludes trailing whitespace), which a runtime may pass on as received.
 */
import { describe, expect, it } from "vitest";
import { bearerMatches, bearerToken } from "../../worker/http.js";

const TOKEN = "demo-relying-party-token-0123456789abcdef";

describe("bearerToken", () => {
  it("takes the token after the scheme, matched without case, with one or more spaces between", () => {
    for (const header of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER  ${TOKEN}`]) expect(bearerToken(header), header).toBe(TOKEN);
  });

  it("leaves out trailing spaces and tabs, which the field value does not include", () => {
    for (const header of [`Bearer ${TOKEN} `, `Bearer ${TOKEN}\t`, `Bearer ${TOKEN} \t `]) expect(bearerToken(header), JSON.stringify(header)).toBe(TOKEN);
  });

  it("refuses anything else: no token, another scheme, a tab after the scheme", () => {
    for (const header of [undefined, "", "Bearer", "Bearer ", "Bearer  \t", `Basic ${TOKEN}`, `Bearer\t${TOKEN}`, `Bearer${TOKEN}`]) expect(bearerToken(header), JSON.stringify(header)).toBeNull();
  });
});

describe("bearerMatches", () => {
  it("matches the token exactly, trailing whitespace aside", async () => {
    expect(await bearerMatches(`Bearer ${TOKEN} `, TOKEN)).toBe(true);
    for (const header of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN} x`, `Bearer ${TOKEN.toUpperCase()}`, `Bearer  ${TOKEN.slice(1)}`]) expect(await bearerMatches(header, TOKEN), header).toBe(false);
    expect(await bearerMatches(`Bearer ${TOKEN}`, undefined)).toBe(false);
  });
});

describe("bearerToken on a long header", () => {
  it("answers at once for a header of a long inner run of spaces (no backtracking)", () => {
    const header = `Bearer a${" ".repeat(200_000)}b`;
    expect(bearerToken(header)).toBe(header.slice(7));
    expect(bearerToken(`Bearer ${" ".repeat(200_000)}`)).toBeNull();
  });
});

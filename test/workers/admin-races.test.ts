/**
 * The admin registry's read-check-writes under concurrency: KV has no compare-and-set, so these
 * calls are serialised by the AdminRegistry object. Each test fires its calls at once
 * (Promise.all) through one app, as a careless integrator or a retrying client would.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AUDIENCE, harness } from "../support/app-harness.js";

const h = () => harness(env, createExecutionContext());
const ROUNDS = 8;
/** Whether `token` is taken as a relying party's: GET /v1/usage without its parameter is 400 once authenticated, else 401. */
const authenticates = async (app: ReturnType<typeof h>, token: string) => (await app.call("/v1/usage", { headers: { authorization: `Bearer ${token}` } })).status !== 401;

describe("relying-party tokens are handed to one party, whatever arrives at once", () => {
  it("two rotations (or a rotation and a registration) given one token: one answers 200/201, the other 409 RELYING_PARTY_EXISTS, and the token authenticates the winner", async () => {
    const app = h();
    for (const name of ["race-rot-a", "race-rot-b"]) {
      expect((await app.admin("POST", "/v1/admin/relying-parties", { name, audiences: [AUDIENCE] })).status).toBe(201);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const token = `race-shared-token-${round}-0123456789abcdefghijklmnop`;
      const calls = [
        app.admin("POST", "/v1/admin/relying-parties/race-rot-a/token", { token }),
        app.admin("POST", "/v1/admin/relying-parties/race-rot-b/token", { token }),
        app.admin("POST", "/v1/admin/relying-parties", { name: `race-reg-${round}`, audiences: [AUDIENCE], token }),
      ];
      const answers = await Promise.all(calls);
      const won = answers.filter((a) => a.status === 200 || a.status === 201);
      expect(won.length, `round ${round}: ${answers.map((a) => a.status)}`).toBe(1);
      for (const lost of answers.filter((a) => !won.includes(a))) expect([lost.status, lost.body.error.code]).toEqual([409, "RELYING_PARTY_EXISTS"]);
      // The token authenticates (400 for the missing invocation_id, not 401).
      expect((await authenticates(app, token))).toBe(true);
    }
  });

  it("registrations of one name at once: one 201, the rest 409, and only the winner's token authenticates", async () => {
    const app = h();
    const tokens = Array.from({ length: ROUNDS }, (_, i) => `race-same-name-token-${i}-0123456789abcdefghijklmnop`);
    const answers = await Promise.all(tokens.map((token) => app.admin("POST", "/v1/admin/relying-parties", { name: "race-same-name", audiences: [AUDIENCE], token })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(ROUNDS - 1);
    const winner = answers.find((a) => a.status === 201)!.body.token;
    for (const token of tokens) {
      expect(await authenticates(app, token), token).toBe(token === winner);
    }
  });
});

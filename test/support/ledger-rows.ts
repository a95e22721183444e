/** Workers-pool only: every row of every table of a Durable Object's SQLite database. */
import { runInDurableObject } from "cloudflare:test";

export const databaseRows = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_o: unknown, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
      .toArray();
    return Object.fromEntries(tables.map(({ name }) => [name, state.storage.sql.exec(`SELECT * FROM "${name}"`).toArray()]));
  });

/**
 * Waits (real time: a ledger's clock) until `retainUntil`, in Unix seconds, has passed. A ledger
 * claims a nonce only while it is retained by its own clock, so a test that wants rows to purge
 * claims them with a retention a moment ahead and waits it out.
 */
export const pastRetention = async (retainUntil: number): Promise<void> => {
  while (Date.now() / 1000 <= retainUntil + 0.01) await new Promise((r) => setTimeout(r, 50));
};

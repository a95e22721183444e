/**
 * `npm start` refuses a busy port (scripts/local-server.ts `ensurePortFree`): busy for whoever
 * calls the instance at `localhost:PORT`, as the README's tour does, so on the IPv6 loopback as
 * well as on 127.0.0.1. A Node server told to listen on "localhost" takes [::1] alone where
 * /etc/hosts names ::1 first (Debian's default), and curl tries [::1] first.
 */
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ensurePortFree } from "../../scripts/local-server.js";

const held: Server[] = [];
/** A server listening on `host` at a port the OS picks; resolves to that port, or null when the host has no such address. */
const listenOn = (host: string) =>
  new Promise<number | null>((ok, fail) => {
    const srv = createServer();
    srv.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRNOTAVAIL" || err.code === "EAFNOSUPPORT" ? ok(null) : fail(err)));
    srv.listen(0, host, () => {
      held.push(srv);
      ok((srv.address() as { port: number }).port);
    });
  });

afterEach(async () => {
  await Promise.all(held.splice(0).map((srv) => new Promise((r) => srv.close(r))));
});

describe("npm start's port check", () => {
  it("refuses a port taken on 127.0.0.1, and takes one nothing listens on", async () => {
    const port = (await listenOn("127.0.0.1"))!;
    await expect(ensurePortFree(port)).rejects.toThrow(`port ${port} is busy: stop what listens there or set PORT`);
    await Promise.all(held.splice(0).map((srv) => new Promise((r) => srv.close(r))));
    await expect(ensurePortFree(port)).resolves.toBeUndefined();
  });

  it("refuses a port taken on the IPv6 loopback alone, where localhost:PORT would reach that other server", async (ctx) => {
    const port = await listenOn("::1");
    if (port === null) ctx.skip();
    await expect(ensurePortFree(port!)).rejects.toThrow(`port ${port} is busy: stop what listens there or set PORT`);
  });
});

/**
 * Starts the Worker locally as a user would (`wrangler dev`, offline, local KV and Durable
 * Objects persisted under `persistTo`) and stops it. Used by `npm start`, the end-to-end
 * suite and the benchmarks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface LocalServer {
  url: string;
  port: number;
  /** The DevTools inspector's port (wrangler dev only). */
  inspectorPort: number | null;
  stop(): Promise<void>;
  /** Settles when the instance's process exits, by stop() or not: its exit code, or its signal's name. */
  exited: Promise<number | string | null>;
}

export interface LocalServerOptions {
  port?: number;
  persistTo: string;
  vars?: Record<string, string>;
  config?: string;
  /** Inherit wrangler's output (npm start) instead of keeping it for error reports. */
  inheritOutput?: boolean;
  readyTimeoutMs?: number;
  /**
   * `false` serves through wrangler's `unstable_startWorker` with the DevTools inspector off
   * (scripts/serve-without-inspector.ts): same proxy, runtime and local storage as `wrangler dev`,
   * without the inspector that makes each `console.log` cost ~90 µs. The benchmarks use it.
   */
  inspector?: boolean;
  /**
   * Aborting it while the instance boots stops the instance (its whole process group: wrangler
   * and workerd) and rejects: `npm start` stops on SIGINT or SIGTERM at any phase, the boots
   * included, without leaving a detached wrangler serving behind it.
   */
  signal?: AbortSignal;
}

/**
 * `n` distinct free loopback ports. The listeners are all held open until every port is known,
 * so the OS cannot hand the same port out twice.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<Server>((ok, fail) => {
      const srv = createServer();
      srv.unref();
      srv.on("error", fail);
      srv.listen(0, "127.0.0.1", () => ok(srv));
    })),
  );
  const ports = servers.map((srv) => (srv.address() as { port: number }).port);
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  return ports;
}

export const freePort = async (): Promise<number> => (await freePorts(1))[0];

/**
 * The environment wrangler runs in here: offline, no metrics. Its log level is WRANGLER_LOG when
 * set, else `level`: "warn" for the suites and the benchmarks (quiet), "log" for `npm start`, whose
 * user should see the Worker's own lines (one JSON line a decision, README "Logs").
 */
export const offlineEnv = (level: "warn" | "log" = "warn"): NodeJS.ProcessEnv => ({
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_LOG: process.env.WRANGLER_LOG ?? level,
});

async function waitHealthy(url: string, child: ChildProcess, timeoutMs: number, output: () => string, signal?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (signal?.aborted) throw new Error("stopped while starting");
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}\n${output()}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`wrangler dev did not become healthy within ${timeoutMs} ms\n${output()}`);
}

/**
 * Refuses a port something else already listens on: its /healthz would otherwise pass for ours.
 * On either loopback: the instance serves 127.0.0.1, but `localhost:PORT` (the README's curl
 * lines) reaches [::1] first where the hosts file names it first, and a server told to listen on
 * "localhost" there takes [::1] alone. A host without IPv6 has no [::1] to be busy.
 */
export async function ensurePortFree(port: number): Promise<void> {
  for (const host of ["127.0.0.1", "::1"]) {
    await new Promise<void>((ok, fail) => {
      const srv = createServer();
      srv.once("error", (err: NodeJS.ErrnoException) => {
        if (host === "::1" && (err.code === "EADDRNOTAVAIL" || err.code === "EAFNOSUPPORT")) ok();
        else fail(new Error(err.code === "EADDRINUSE" ? `port ${port} is busy: stop what listens there or set PORT` : `port ${port}: ${err.message}`));
      });
      srv.listen(port, host, () => srv.close(() => ok()));
    });
  }
}

function wranglerDevArgs(o: LocalServerOptions, config: string, port: number, inspectorPort: number): string[] {
  const args = [
    resolve(PROJECT_ROOT, "node_modules/wrangler/bin/wrangler.js"), "dev",
    "--config", config,
    "--ip", "127.0.0.1", "--port", String(port), "--persist-to", o.persistTo,
    "--inspector-port", String(inspectorPort),
    "--show-interactive-dev-session=false",
  ];
  for (const [k, v] of Object.entries(o.vars ?? {})) args.push("--var", `${k}:${v}`);
  return args;
}

export async function startLocalServer(o: LocalServerOptions): Promise<LocalServer> {
  if (o.port !== undefined) await ensurePortFree(o.port);
  const [spare, spareInspector] = await freePorts(2);
  if (o.signal?.aborted) throw new Error("stopped while starting");
  const port = o.port ?? spare;
  const inspectorPort = o.inspector === false ? null : spareInspector === port ? spare : spareInspector;
  const config = o.config ?? resolve(PROJECT_ROOT, "wrangler.toml");
  const args = o.inspector === false
    ? ["--import", "tsx", resolve(PROJECT_ROOT, "scripts/serve-without-inspector.ts"), config, o.persistTo, String(port), JSON.stringify(o.vars ?? {})]
    : wranglerDevArgs(o, config, port, inspectorPort!);
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: offlineEnv(o.inheritOutput ? "log" : "warn"),
    stdio: o.inheritOutput ? "inherit" : ["ignore", "pipe", "pipe"],
    detached: process.platform !== "win32",
  });
  const exitedAt = new Promise<number | string | null>((r) => child.once("exit", (code, signal) => r(code ?? signal)));
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const url = `http://127.0.0.1:${port}`;
  const kill = (sig: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, sig);
    } catch {
      child.kill(sig);
    }
  };
  /** Whether anything is left in the instance's process group (signal 0 only asks). */
  const groupLeft = () => {
    try {
      if (child.pid && process.platform !== "win32") return process.kill(-child.pid, 0);
    } catch {
      /* ESRCH: the group is empty */
    }
    return false;
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      // wrangler is gone, but the workerd it started may not be: killed or crashed alone, wrangler
      // leaves workerd in its group still serving the port. Stopped the same way.
      if (!groupLeft()) return;
      kill("SIGTERM");
      for (const until = Date.now() + 5000; groupLeft() && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
      if (groupLeft()) kill("SIGKILL");
      return;
    }
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    kill("SIGTERM");
    const timer = setTimeout(() => kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  };
  const onAbort = () => void stop();
  o.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await waitHealthy(url, child, o.readyTimeoutMs ?? 60_000, () => log, o.signal);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
  }
  return { url, port, inspectorPort, stop, exited: exitedAt };
}

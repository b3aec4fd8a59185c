// One `lyre serve` process on port 0 with the tiny fixture model (as tests/e2e/conftest.py).

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SHARED = process.env.LYRE_SHARED ?? resolve(ROOT, "../shared");
export const FIXTURE = join(SHARED, "fixtures", "tiny-custom-voice");
const LYRE = process.env.LYRE_BIN ?? join(ROOT, "target", "debug", "lyre");

// A GET that gives up after a few seconds instead of hanging a test.
export const get = (url) => fetch(url, { signal: AbortSignal.timeout(10_000) });

export class Server {
  // `demo: true` serves the built-in demo model (written to a temp dir) instead of the fixture.
  static async start({ env = {}, demo = false } = {}) {
    if (!existsSync(FIXTURE)) throw new Error(`no fixture model at ${FIXTURE} (set LYRE_SHARED)`);
    if (!existsSync(LYRE)) throw new Error(`no lyre binary at ${LYRE} (cargo build -p lyre-server)`);
    const model = demo ? [] : ["--model-dir", FIXTURE];
    const demoDir = demo ? mkdtempSync(join(tmpdir(), "lyre-browser-demo-")) : null;
    if (demoDir) env = { LYRE_DEMO_DIR: join(demoDir, "model"), ...env };
    const proc = spawn(LYRE, ["serve", ...model, "--listen", "127.0.0.1:0"], {
      env: {
        ...process.env,
        LYRE_MODEL_ALLOW_CPU_ADAPTER: "true",
        LYRE_ENGINE_MAX_SESSIONS: "4",
        LYRE_ENGINE_MAX_POSITIONS: "512",
        LYRE_ENGINE_MAX_ROWS_PER_TICK: "256",
        LYRE_SERVER_DRAIN_TIMEOUT_S: "5",
        LYRE_LOG: "info",
        // Its own voice database, not one in the working directory.
        LYRE_VOICES_DIR: mkdtempSync(join(tmpdir(), "lyre-browser-voices-")),
        ...env,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const server = new Server(proc, demoDir);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => (server.log += chunk));
    try {
      await server.waitFor(() => /lyre listening on (http:\/\/\S+)/.test(server.log), 120_000, "listening");
      server.url = /lyre listening on (http:\/\/\S+)/.exec(server.log)[1];
      await server.waitFor(async () => (await get(`${server.url}/readyz`)).ok, 120_000, "ready");
    } catch (e) {
      await server.stop();
      throw e;
    }
    return server;
  }

  constructor(proc, tempDir) {
    this.proc = proc;
    this.tempDir = tempDir;
    this.log = "";
    this.url = null;
  }

  async liveSessions() {
    return (await (await get(`${this.url}/readyz`)).json()).live_sessions;
  }

  async waitFor(check, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error(`the server exited (${this.proc.exitCode}):\n${this.log}`);
      try {
        if (await check()) return;
      } catch {
        // not answering yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}\n${this.log.slice(-4000)}`);
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.on("exit", r));
      this.proc.kill("SIGTERM");
      const killer = setTimeout(() => this.proc.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(killer);
    }
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
  }
}

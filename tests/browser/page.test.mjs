// The demo page at / in headless Chromium (Debian's, driven by playwright-core) against the
// real `lyre serve` with the tiny fixture model: pickers filled from the API, Speak streams and
// schedules audio on the Web Audio clock, the figures show, Stop ends the session on the server,
// type-as-you-go sends text to the open session, Flush ends an utterance and the next text starts
// the next segment, API keys work, the demo model is announced.

import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { chromium } from "playwright-core";

import { get, Server } from "./server.mjs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOT = process.env.LYRE_SCREENSHOT ?? join(tmpdir(), `lyre-demo-${process.pid}.png`);
const WAIT = { timeout: 90_000 };

let browser;

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Audio may start without a click (the tests click anyway); muted, since CI has no speakers;
    // --no-sandbox because CI runs as root.
    args: ["--autoplay-policy=no-user-gesture-required", "--mute-audio", "--no-sandbox"],
  });
});

after(async () => {
  await browser?.close();
});

// A fresh page, with the JSON messages it sends on its WebSockets and any script errors.
async function openPage(server, path = "/") {
  const page = await browser.newPage({ viewport: { width: 1100, height: 860 } });
  const sent = [];
  const problems = [];
  page.on("websocket", (ws) => ws.on("framesent", (f) => typeof f.payload === "string" && sent.push(JSON.parse(f.payload))));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  await page.goto(server.url + path);
  return { page, sent, problems };
}

const stats = (page) => page.evaluate(() => ({ ...window.lyreStats }));
const until = (page, fn, arg) => page.waitForFunction(fn, arg, WAIT);

// The JSON messages of one type the page has sent. The browser reports each sent WebSocket
// message to this process asynchronously, so wait until `done` (of the list) holds.
async function sentOfType(sent, type, done) {
  const ofType = () => sent.filter((m) => m.type === type);
  for (const deadline = Date.now() + 5000; !done(ofType()) && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return ofType();
}

async function stopAndExpectNoSessions(page, server) {
  assert.equal(await server.liveSessions(), 1, "the session is live before Stop");
  await page.click("#stop");
  await server.waitFor(async () => (await server.liveSessions()) === 0, 10_000, "live_sessions 0");
  assert.equal((await stats(page)).state, "stopped");
  assert.equal(await page.locator("#speak").isEnabled(), true);
}

describe("without API keys", () => {
  let server;
  before(async () => {
    server = await Server.start();
  });
  after(async () => {
    await server?.stop();
  });

  test("Speak plays the text as it streams; Stop ends the session", async () => {
    const { page, sent, problems } = await openPage(server);
    await until(page, () => window.lyreStats.ready);
    assert.equal(await page.locator("#demo-note").isHidden(), true, "no demo notice for a real checkpoint");
    assert.equal(await page.locator("#instruct-row").isHidden(), true, "0.6B CustomVoice takes no instruction");
    const shown = await page.locator("#voice option").evaluateAll((os) => os.map((o) => o.value));
    const served = (await (await get(`${server.url}/v1/voices`)).json()).voices.map((v) => v.name);
    assert.deepEqual(shown, served);
    assert.ok((await page.locator("#language option").allTextContents()).includes("english"));

    const text = "Hello world, this is a test of the page that speaks. ".repeat(6);
    await page.selectOption("#voice", "ryan");
    await page.selectOption("#language", "english");
    await page.fill("#text", text);
    await page.click("#speak");

    await until(page, () => window.lyreStats.framesScheduled >= 8);
    assert.deepEqual(sent.slice(0, 2), [
      { type: "start", format: "pcm16", language: "english", voice: "ryan", text },
      { type: "end" },
    ]);
    const s = await stats(page);
    assert.ok(s.ttfaMs > 0, `ttfa ${s.ttfaMs}`);
    assert.equal(s.state, "speaking");
    assert.match(await page.textContent("#stat-ttfa"), /^\d+ ms$/);
    assert.match(await page.textContent("#stat-speed"), /^\d+\.\d\d×$/);
    assert.ok(Number(await page.textContent("#stat-frames")) >= 8);
    // Gapless: each frame starts exactly where the one before ends (1920 samples at 24 kHz on
    // the context's own clock), except after a counted gap (the stream fell behind), never overlapping.
    const played = await stats(page);
    assert.equal(played.contextRate, 24000);
    let breaks = 0;
    for (let i = 1; i < played.starts.length; i++) {
      const step = (played.starts[i] - played.starts[i - 1]) * 24000;
      assert.ok(step > 1920 - 1e-6, `frame ${i} overlaps the one before (${step} samples)`);
      if (Math.abs(step - 1920) > 1e-6) breaks++;
    }
    assert.equal(breaks, played.gaps, "every discontinuity is a counted gap");
    // The audio went through the Web Audio graph: the analyser after the sources heard it.
    await until(page, () => window.lyreStats.peak > 0.001);
    await until(page, () => window.lyreStats.framesScheduled >= 25);
    await page.screenshot({ path: SCREENSHOT });

    await stopAndExpectNoSessions(page, server);
    assert.deepEqual(sent.at(-1), { type: "cancel" });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("Chromium decodes every audio format the server sends, Ogg Opus included", async () => {
    const { page, problems } = await openPage(server);
    const frames = 12;
    for (const format of ["opus", "wav", "flac", "mp3"]) {
      const decoded = await page.evaluate(async ({ format, frames }) => {
        const body = { text: "Hello world.", voice: "vivian", format, max_frames: frames, ignore_eos: true };
        const r = await fetch("/v1/tts", { method: "POST", body: JSON.stringify(body) });
        const bytes = await r.arrayBuffer();
        const audio = await new OfflineAudioContext(1, 24000, 24000).decodeAudioData(bytes);
        const pcm = audio.getChannelData(0);
        const rms = Math.sqrt(pcm.reduce((a, x) => a + x * x, 0) / pcm.length);
        return { type: r.headers.get("content-type"), rate: audio.sampleRate, length: audio.length, rms };
      }, { format, frames });
      assert.equal(decoded.rate, 24000, format);
      assert.ok(decoded.rms > 1e-3, `${format}: silent (${decoded.rms})`);
      // Ogg Opus, WAV and FLAC decode to exactly the clip; MP3 adds its encoder delay and padding.
      const extra = decoded.length - frames * 1920;
      assert.ok(format === "mp3" ? extra >= 0 && extra <= 2500 : extra === 0, `${format}: ${decoded.length} samples`);
    }
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("type as you go sends each piece to the open session", async () => {
    const { page, sent, problems } = await openPage(server);
    await until(page, () => window.lyreStats.ready);
    await page.check("#live-typing");
    await page.fill("#text", "");
    await page.click("#speak");
    await until(page, () => window.lyreStats.state === "speaking");
    assert.equal((await stats(page)).framesReceived, 0, "no text yet, no audio");

    const typed = "Hello there, I am typing this as you listen. ";
    await page.locator("#text").pressSequentially(typed, { delay: 15 });
    await until(page, () => window.lyreStats.framesScheduled >= 3);
    // The last word may be on the wire but not yet seen here.
    const texts = await sentOfType(sent, "text", (ts) => ts.map((m) => m.text).join("") === typed);
    const pieces = texts.map((m) => m.text);
    assert.ok(pieces.length >= 2, `text went in ${pieces.length} messages`);
    assert.equal(pieces.join(""), typed);
    assert.equal(await page.locator("#finish").isVisible(), true);

    await stopAndExpectNoSessions(page, server);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("Flush speaks the text typed so far; the next text is the next segment", async () => {
    const { page, sent, problems } = await openPage(server);
    await until(page, () => window.lyreStats.ready);
    await page.check("#live-typing");
    await page.fill("#text", "");
    assert.equal(await page.locator("#flush").isVisible(), true, "Flush shows while typing as you go");
    assert.equal(await page.locator("#flush").isDisabled(), true, "no session, no Flush");
    await page.click("#speak");
    await until(page, () => window.lyreStats.state === "speaking");
    assert.equal(await page.locator("#flush").isDisabled(), true, "nothing typed, nothing to flush");

    // The first utterance: typed, flushed, spoken to its end (`flushed`), the session still open.
    const first = "Hello there, this is the first part. ";
    await page.locator("#text").pressSequentially(first, { delay: 15 });
    await until(page, () => window.lyreStats.framesScheduled >= 3);
    await until(page, () => !document.getElementById("flush").disabled);
    await page.click("#flush");
    assert.equal(await page.locator("#flush").isDisabled(), true, "everything typed is flushed");
    await until(page, () => window.lyreStats.flushed.length === 1);
    let s = await stats(page);
    assert.equal(s.flushes, 1);
    assert.ok(s.flushed[0] >= 3, `flushed after ${s.flushed[0]} frames`);
    assert.equal(s.framesReceived, s.flushed[0], "flushed follows the utterance's last frame");
    assert.deepEqual(s.segments, [], "no next segment before more text");
    assert.equal(s.state, "speaking");
    assert.equal(await server.liveSessions(), 1, "the session stays open after the flush");
    assert.match(await page.textContent("#events"), new RegExp(`flushed after ${s.flushed[0]} frames`));
    assert.equal(await page.locator("#finish").isVisible(), true);
    const joined = (ts) => ts.map((m) => m.text).join("");
    assert.equal(joined(await sentOfType(sent, "text", (ts) => joined(ts) === first)), first);
    assert.deepEqual(await sentOfType(sent, "flush", (fs) => fs.length === 1), [{ type: "flush" }]);
    assert.ok(sent.findIndex((m) => m.type === "flush") > sent.findLastIndex((m) => m.type === "text"),
      "the flush came after all the text typed before it");

    // More text starts segment 1 of the same session, and its audio follows the first's.
    const second = "And now the second part. ";
    await page.locator("#text").pressSequentially(second, { delay: 15 });
    await until(page, () => window.lyreStats.segments.length === 1);
    await until(page, (n) => window.lyreStats.framesReceived >= n + 3, s.flushed[0]);
    s = await stats(page);
    assert.deepEqual(s.segments, [{ index: 1, afterFrames: s.flushed[0] }]);
    assert.match(await page.textContent("#events"), /segment 1 started/);
    const seconds = (s.flushed[0] * 0.08).toFixed(2);
    assert.deepEqual(s.events, [
      "flush sent",
      `flushed after ${s.flushed[0]} frames (${seconds} s of audio)`,
      "segment 1 started",
    ]);

    // Done typing ends the text: the session finishes cleanly with every frame sent.
    await page.click("#finish");
    await until(page, () => window.lyreStats.server !== null);
    s = await stats(page);
    assert.equal(s.server.type, "done");
    assert.equal(s.server.frames, s.framesReceived);
    assert.equal(s.framesScheduled, s.framesReceived);
    assert.ok(s.framesReceived > s.flushed[0] + 3, `${s.framesReceived} frames in all`);
    assert.deepEqual(s.flushed, [s.flushed[0]], "one flushed: the end sends done, not flushed");
    assert.equal(s.lastError, null);
    assert.match(s.state, /^(playing|done)$/);
    assert.equal(await page.locator("#flush").isDisabled(), true, "no Flush after the end");
    assert.equal(await page.locator("#finish").isHidden(), true);
    assert.match(await page.textContent("#server-stats"), new RegExp(`Server: ${s.framesReceived} frames`));
    await server.waitFor(async () => (await server.liveSessions()) === 0, 10_000, "live_sessions 0");
    assert.equal(joined(await sentOfType(sent, "text", (ts) => joined(ts) === first + second)), first + second);
    assert.equal((await sentOfType(sent, "end", (es) => es.length === 1)).length, 1);
    assert.deepEqual(problems, []);
    await page.close();
  });
});

describe("with API keys required", () => {
  const KEY = "browser-test-key-1";
  let server;
  before(async () => {
    server = await Server.start({ env: { LYRE_AUTH_API_KEYS: KEY } });
  });
  after(async () => {
    await server?.stop();
  });

  test("the page asks for the key, then loads the voices and speaks with it", async () => {
    const { page } = await openPage(server);
    await until(page, () => !document.getElementById("notice").hidden);
    assert.match(await page.textContent("#notice"), /requires an API key/);
    assert.equal(await page.locator("#speak").isDisabled(), true);

    await page.fill("#key", "wrong-key-123");
    await page.locator("#key").blur();
    await until(page, () => /refused/.test(document.getElementById("notice").textContent));

    await page.fill("#key", KEY);
    await page.locator("#key").blur();
    await until(page, () => window.lyreStats.ready);
    assert.ok((await page.locator("#voice option").count()) > 0);
    await page.fill("#text", "Only with the right key.");
    await page.click("#speak");
    await until(page, () => window.lyreStats.framesScheduled >= 3);
    await stopAndExpectNoSessions(page, server);
    await page.close();
  });

  test("a key in the page's ?token= parameter is used, for one session after another", async () => {
    const { page, problems } = await openPage(server, `/?token=${KEY}`);
    await until(page, () => window.lyreStats.ready);
    for (const round of [1, 2]) {
      await page.click("#speak");
      await until(page, () => window.lyreStats.framesScheduled >= 2);
      await stopAndExpectNoSessions(page, server);
      assert.equal((await stats(page)).sessions, round);
    }
    assert.deepEqual(problems, []);
    await page.close();
  });
});

describe("on the built-in demo model", () => {
  let server;
  before(async () => {
    server = await Server.start({ demo: true });
  });
  after(async () => {
    await server?.stop();
  });

  test("the page says it speaks noise", async () => {
    const { page, problems } = await openPage(server);
    await until(page, () => window.lyreStats.ready);
    assert.equal(await page.locator("#demo-note").isVisible(), true);
    assert.match(await page.textContent("#demo-note"), /random weights.*--model-dir/);
    assert.deepEqual(problems, []);
    await page.close();
  });
});

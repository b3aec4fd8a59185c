// The demo page: pickers filled from /v1/models and /v1/voices, Speak streams the text over a
// WebSocket session and plays it as it arrives, Stop cancels. `window.lyreStats` mirrors the
// figures on screen (the browser tests read it).

import { ApiError, getJson, streamUrl } from "./api.js";
import { Player } from "./player.js";
import { Scope } from "./scope.js";
import { Session } from "./session.js";

const $ = (id) => document.getElementById(id);
const TEXT_FLUSH_MS = 120;

const stats = {
  state: "idle",
  ready: false,
  sessions: 0,
  framesReceived: 0,
  framesScheduled: 0,
  audioSeconds: 0,
  gaps: 0,
  ttfaMs: null,
  speed: null,
  textMessages: 0,
  peak: 0,
  server: null,
  lastError: null,
  starts: [], // each frame's start on the AudioContext clock (s), this session's first 1000
  contextRate: null,
};
window.lyreStats = stats;

const player = new Player();
const scope = new Scope($("scope"), (peak) => (stats.peak = Math.max(stats.peak, peak)));
let session = null;
let sessionStart = 0;
let sentText = "";
let flushTimer = null;

// ---- server info -------------------------------------------------------------------------

function apiKey() {
  return $("key").value.trim();
}

function showNotice(text) {
  $("notice").textContent = text ?? "";
  $("notice").hidden = !text;
}

async function loadInfo() {
  stats.ready = false;
  try {
    const models = await getJson("/v1/models", apiKey());
    const voices = await getJson("/v1/voices", apiKey());
    const model = models.data[0];
    $("model").textContent = `${model.description} · ${voices.model_type}`;
    $("demo-note").textContent = model.demo ? `Demo model: ${model.note ?? "random weights, it speaks noise"}.` : "";
    $("demo-note").hidden = !model.demo;
    fillVoices(voices);
    showNotice(null);
    stats.ready = true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      $("model").textContent = "API key required";
      showNotice(apiKey() ? "The server refused this API key." : "This server requires an API key: enter it above.");
      $("key").focus();
    } else {
      showNotice(`Cannot reach the server: ${e.message}`);
    }
  }
  updateButtons();
}

function fillVoices(info) {
  const voice = $("voice");
  const previous = voice.value;
  voice.replaceChildren(
    ...info.voices.filter((v) => v.usable !== false).map((v) => {
      const extra = [v.dialect, v.kind !== "preset" ? v.kind : null].filter(Boolean).join(", ");
      return new Option(extra ? `${v.name} (${extra})` : v.name, v.name);
    }),
  );
  if (!voice.options.length) {
    const hint = info.cloning ? "(none: upload one with POST /v1/voices)" : "(none: describe one)";
    voice.append(new Option(hint, ""));
  }
  if (info.voices.some((v) => v.name === previous)) voice.value = previous;

  const language = $("language");
  const lang = language.value;
  language.replaceChildren(new Option("auto", "auto"), ...info.languages.map((l) => new Option(l, l)));
  if (info.languages.includes(lang)) language.value = lang;

  $("instruct-row").hidden = info.instruct === "unsupported";
  $("instruct").required = info.instruct === "required";
  $("instruct").placeholder =
    info.instruct === "required" ? "describe the voice (required)" : "e.g. speak slowly and warmly";
}

// ---- speaking ----------------------------------------------------------------------------

function setState(state) {
  stats.state = state;
  $("state").textContent = state;
  updateButtons();
}

function updateButtons() {
  const live = session?.live ?? false;
  $("speak").disabled = live || !stats.ready;
  $("stop").disabled = !live && !player.playing;
  $("finish").hidden = !(live && $("live-typing").checked && !session.textEnded);
  $("live-hint").hidden = !$("live-typing").checked;
}

function resetStats() {
  Object.assign(stats, {
    framesReceived: 0, framesScheduled: 0, audioSeconds: 0, gaps: 0,
    ttfaMs: null, speed: null, textMessages: 0, peak: 0, server: null, lastError: null, starts: [],
  });
  $("server-stats").textContent = "";
  render();
}

function speak() {
  if (session?.live) return;
  const typing = $("live-typing").checked;
  const text = $("text").value;
  if (!typing && !text.trim()) {
    showNotice("Type something to say first.");
    return;
  }
  showNotice(null);
  player.prepare(); // inside the click, so that autoplay rules let it start
  player.begin();
  scope.attach(player.analyser);
  stats.contextRate = player.ctx.sampleRate;
  resetStats();
  stats.sessions++;

  const start = { language: $("language").value };
  if ($("voice").value) start.voice = $("voice").value;
  if (!$("instruct-row").hidden && $("instruct").value.trim()) start.instruct = $("instruct").value.trim();
  if (text) start.text = text;
  sentText = text;
  sessionStart = performance.now();
  session = new Session(streamUrl(apiKey()), start, {
    onStarted: () => setState("speaking"),
    onFrame: onFrame,
    onDone: onDone,
    onError: onError,
    onCancelled: () => setState("stopped"),
    onClose: () => {
      showNotice("The connection closed before the session ended (is the API key right?).");
      setState("failed");
    },
  });
  if (!typing) session.end();
  setState("connecting");
}

function onFrame(bytes) {
  if (stats.ttfaMs === null) stats.ttfaMs = performance.now() - sessionStart;
  stats.framesReceived++;
  const when = player.push(bytes);
  if (stats.starts.length < 1000) stats.starts.push(when);
  stats.framesScheduled++;
  stats.gaps = player.gaps;
  stats.audioSeconds += bytes.byteLength / 2 / 24000;
  stats.speed = stats.audioSeconds / ((performance.now() - sessionStart) / 1000);
  render();
}

function onDone(msg) {
  stats.server = msg;
  const speed = msg.rtf > 0 ? `${(1 / msg.rtf).toFixed(2)}× real time` : "–";
  $("server-stats").textContent =
    `Server: ${msg.frames} frames, first audio after ${msg.ttfa_ms.toFixed(1)} ms, ` +
    `${speed}, ended by ${msg.finish_reason}.`;
  setState(player.playing ? "playing" : "done");
}

function onError(msg, endsSession) {
  stats.lastError = msg;
  showNotice(`${msg.code}: ${msg.message}`);
  if (endsSession) setState("failed");
}

function stop() {
  session?.cancel();
  player.stop();
  clearTimeout(flushTimer);
  setState("stopped");
}

// ---- type as you go ------------------------------------------------------------------------

// Sends what was typed after the text already sent; earlier edits cannot be unsaid.
function flushTyped() {
  flushTimer = null;
  if (!session?.live || session.textEnded) return;
  const value = $("text").value;
  if (!value.startsWith(sentText)) {
    sentText = value;
    showNotice("Text already sent cannot be changed; what you add at the end is spoken.");
    return;
  }
  const piece = value.slice(sentText.length);
  if (!piece) return;
  session.sendText(piece);
  sentText = value;
  stats.textMessages++;
}

function onTyped(ev) {
  if (!$("live-typing").checked || !session?.live) return;
  clearTimeout(flushTimer);
  // A finished word goes at once; otherwise wait for a short pause in the typing.
  const wordEnded = /[\s.,;:!?]$/.test($("text").value) || ev.inputType === "insertFromPaste";
  flushTimer = setTimeout(flushTyped, wordEnded ? 0 : TEXT_FLUSH_MS);
}

function finishTyping() {
  flushTyped();
  session?.end();
  updateButtons();
}

// ---- figures -----------------------------------------------------------------------------

function render() {
  $("stat-ttfa").textContent = stats.ttfaMs === null ? "–" : `${stats.ttfaMs.toFixed(0)} ms`;
  $("stat-speed").textContent = stats.speed === null ? "–" : `${stats.speed.toFixed(2)}×`;
  $("stat-frames").textContent = String(stats.framesReceived);
  $("stat-audio").textContent = `${stats.audioSeconds.toFixed(2)} s`;
  $("stat-gaps").textContent = String(stats.gaps);
  $("stat-buffer").textContent = player.ctx ? `${(player.bufferedAhead() * 1000).toFixed(0)} ms` : "–";
}

function tick() {
  render();
  if (stats.state === "playing" && !player.playing) setState("done");
  else updateButtons();
  setTimeout(tick, 100);
}

// ---- wiring ------------------------------------------------------------------------------

const params = new URLSearchParams(location.search);
$("key").value = params.get("token") ?? sessionStorage.getItem("lyre.key") ?? "";
$("key").addEventListener("change", () => {
  sessionStorage.setItem("lyre.key", apiKey());
  loadInfo();
});
$("speak").addEventListener("click", speak);
$("stop").addEventListener("click", stop);
$("finish").addEventListener("click", finishTyping);
$("live-typing").addEventListener("change", updateButtons);
$("text").addEventListener("input", onTyped);
$("text").addEventListener("keydown", (ev) => {
  if (ev.key !== "Enter" || !(ev.ctrlKey || ev.metaKey)) return;
  ev.preventDefault();
  if (session?.live && $("live-typing").checked) finishTyping();
  else speak();
});
loadInfo();
tick();

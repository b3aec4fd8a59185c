// The demo page: pickers filled from /v1/models and /v1/voices, Speak streams the text over a
// WebSocket session and plays it as it arrives, Stop cancels; while typing as you go, Flush ends
// the utterance and the event log shows its `flushed` and the next `segment`. `window.lyreStats`
// mirrors the figures on screen (the browser tests read it).

import { ApiError, getJson, streamUrl } from "./api.js";
import { Player } from "./player.js";
import { Scope } from "./scope.js";
import { Session } from "./session.js";

const $ = (id) => document.getElementById(id);
const TYPING_PAUSE_MS = 120;
const FRAME_S = 0.08;
const MAX_EVENT_LINES = 12;

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
  flushes: 0, // `flush` messages sent
  flushed: [], // each `flushed` message's frames
  segments: [], // each `segment` message: its index and the frames received before it
  events: [], // the event log's lines
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
let unflushed = false; // text (not only spaces) sent since the session started or last flushed
let typingTimer = null;

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
  const typing = $("live-typing").checked;
  const takesText = live && typing && !session.textEnded;
  $("speak").disabled = live || !stats.ready;
  $("stop").disabled = !live && !player.playing;
  $("flush").hidden = !typing;
  $("flush").disabled = !(takesText && hasUnflushedText());
  $("finish").hidden = !takesText;
  $("live-hint").hidden = !typing;
}

function resetStats() {
  Object.assign(stats, {
    framesReceived: 0, framesScheduled: 0, audioSeconds: 0, gaps: 0,
    ttfaMs: null, speed: null, textMessages: 0, peak: 0, server: null, lastError: null, starts: [],
    flushes: 0, flushed: [], segments: [], events: [],
  });
  $("server-stats").textContent = "";
  $("events").replaceChildren();
  $("events").hidden = true;
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
  unflushed = text.trim() !== "";
  sessionStart = performance.now();
  session = new Session(streamUrl(apiKey()), start, {
    onStarted: () => setState("speaking"),
    onFrame: onFrame,
    onSegment: onSegment,
    onFlushed: onFlushed,
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
  clearTimeout(typingTimer);
  setState("stopped");
}

// ---- type as you go ------------------------------------------------------------------------

// Sends what was typed after the text already sent; earlier edits cannot be unsaid.
function sendTyped() {
  clearTimeout(typingTimer);
  typingTimer = null;
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
  unflushed ||= piece.trim() !== "";
  stats.textMessages++;
}

function onTyped(ev) {
  if (!$("live-typing").checked || !session?.live) return;
  clearTimeout(typingTimer);
  // A finished word goes at once; otherwise wait for a short pause in the typing.
  const wordEnded = /[\s.,;:!?]$/.test($("text").value) || ev.inputType === "insertFromPaste";
  typingTimer = setTimeout(sendTyped, wordEnded ? 0 : TYPING_PAUSE_MS);
  updateButtons();
}

function finishTyping() {
  sendTyped();
  session?.end();
  updateButtons();
}

// ---- flush: one utterance after another in the open session ----------------------------------

// Text typed since the last flush: sent already, or still waiting for a pause in the typing.
function hasUnflushedText() {
  const value = $("text").value;
  return unflushed || (value.startsWith(sentText) && value.slice(sentText.length).trim() !== "");
}

// Sends what is typed, then `flush`: the server speaks it to its end and keeps the session open.
function flush() {
  if (!session?.live || session.textEnded) return;
  sendTyped();
  if (!unflushed) return;
  session.flush();
  unflushed = false;
  stats.flushes++;
  logEvent("flush sent");
  updateButtons();
}

function onFlushed(msg) {
  stats.flushed.push(msg.frames);
  logEvent(`flushed after ${msg.frames} frames (${(msg.frames * FRAME_S).toFixed(2)} s of audio)`);
}

function onSegment(msg) {
  stats.segments.push({ index: msg.index, afterFrames: stats.framesReceived });
  logEvent(`segment ${msg.index} started`);
}

// One line in the event log, stamped with the seconds since Speak; the last few are shown.
function logEvent(text) {
  const seconds = ((performance.now() - sessionStart) / 1000).toFixed(2);
  const line = document.createElement("li");
  line.textContent = `${seconds} s · ${text}`;
  $("events").append(line);
  while ($("events").children.length > MAX_EVENT_LINES) $("events").firstElementChild.remove();
  $("events").hidden = false;
  if (stats.events.length < 1000) stats.events.push(text);
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
$("flush").addEventListener("click", flush);
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

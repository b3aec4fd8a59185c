// One live session on `GET /v1/tts/stream` (docs/protocol.md): a `start`, text pieces (with a
// `flush` wherever an utterance should end), then `end` (or `cancel`); PCM frames come back as
// binary messages, a `segment` before each later utterance's first frame, a `flushed` after each
// flushed utterance's last, then `done` or an `error`.

// Errors about one client message: the session on the socket goes on.
const MESSAGE_ERRORS = new Set(["invalid_message", "text_too_long", "text_ended", "no_session", "session_active"]);

export class Session {
  constructor(url, start, handlers) {
    this.handlers = handlers;
    this.started = false;
    this.finished = false;
    this.textEnded = false;
    this.queue = [{ type: "start", format: "pcm16", ...start }];
    this.ws = new WebSocket(url, ["lyre"]);
    this.ws.binaryType = "arraybuffer";
    this.ws.onopen = () => this.queue.splice(0).forEach((m) => this.ws.send(JSON.stringify(m)));
    this.ws.onmessage = (ev) => this.onMessage(ev.data);
    this.ws.onclose = (ev) => this.finish(() => handlers.onClose?.(ev));
  }

  get live() {
    return !this.finished;
  }

  sendText(text) {
    if (text && !this.textEnded) this.send({ type: "text", text });
  }

  // Speaks the text sent so far to its end; text sent afterwards starts the next utterance.
  flush() {
    if (!this.textEnded) this.send({ type: "flush" });
  }

  end() {
    if (this.textEnded) return;
    this.textEnded = true;
    this.send({ type: "end" });
  }

  cancel() {
    if (this.finished) return;
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "cancel" }));
    this.finish(() => this.handlers.onCancelled?.());
    this.ws.close(1000, "cancelled");
  }

  send(msg) {
    if (this.finished) return;
    if (this.ws.readyState === WebSocket.CONNECTING) this.queue.push(msg);
    else if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  onMessage(data) {
    if (this.finished) return;
    if (data instanceof ArrayBuffer) {
      this.handlers.onFrame?.(data);
      return;
    }
    const msg = JSON.parse(data);
    if (msg.type === "started") {
      this.started = true;
      this.handlers.onStarted?.(msg);
    } else if (msg.type === "segment") {
      this.handlers.onSegment?.(msg);
    } else if (msg.type === "flushed") {
      this.handlers.onFlushed?.(msg);
    } else if (msg.type === "done") {
      this.finish(() => this.handlers.onDone?.(msg));
      this.ws.close(1000);
    } else if (msg.type === "error") {
      const endsSession = !(this.started && MESSAGE_ERRORS.has(msg.code));
      if (!endsSession) {
        this.handlers.onError?.(msg, false);
        return;
      }
      this.finish(() => this.handlers.onError?.(msg, true));
      this.ws.close(1000);
    }
  }

  // Runs `report` once, for whichever way the session ended first.
  finish(report) {
    if (this.finished) return;
    this.finished = true;
    report();
  }
}

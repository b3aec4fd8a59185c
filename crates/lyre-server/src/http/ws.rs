//! `GET /v1/tts/stream`: live sessions over a WebSocket. Text may keep arriving while audio
//! plays; each 80 ms frame goes out as one binary message the moment its tick finishes.
//! Closing the socket cancels the session. docs/protocol.md specifies the messages.

use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use tracing::Instrument;

use super::access_log::AccessRecord;
use super::auth::{Caller, KeySlot};
use super::error::ApiError;
use super::listener::ConnectionSlot;
use super::voices::{check_reference_fits, check_transcript, lookup};
use super::AppState;
use crate::audio::{stream_encoder, AudioFormat, FrameEncoder, PcmStream, SAMPLE_RATE};
use crate::errors::{ErrorCode, Failure};
use crate::protocol::{parse_client_message, ClientMessage, ServerMessage, StartMessage};
use crate::scheduler::{SessionEvent, SessionHandle};
use crate::voices::Encoders;

pub async fn handle(State(state): State<AppState>, ws: WebSocketUpgrade, req: Request) -> Response {
    // Refused before the upgrade, so a load balancer can still send the client elsewhere.
    if let Some(f) = state.scheduler.refusal() {
        return ApiError(f).into_response();
    }
    let caller = Caller::of(&req);
    // The socket outlives this handler: it keeps the request's span (so its lines carry the
    // request id), its access line (written when it closes) and its place under the connection cap.
    let span = tracing::Span::current();
    let held =
        Held { access: AccessRecord::of(&req), _slot: req.extensions().get::<ConnectionSlot>().cloned() };
    ws.max_message_size(state.config.limits.max_ws_message_bytes)
        .protocols(["lyre"])
        .on_upgrade(move |socket| Connection::new(state, caller, held).run(socket).instrument(span))
        .into_response()
}

/// What the request handed over to its socket.
struct Held {
    access: Option<AccessRecord>,
    _slot: Option<ConnectionSlot>,
}

/// One live session on the socket.
struct Active {
    handle: SessionHandle,
    encoder: Option<Box<dyn FrameEncoder>>,
    format: &'static str,
    send_codes: bool,
    text_ended: bool,
    /// The segment of the last frame sent.
    segment: u32,
    _slot: KeySlot,
}

struct Connection {
    state: AppState,
    caller: Caller,
    held: Held,
    session: Option<Active>,
    last_client_message: Instant,
    window_start: Instant,
    window_count: u32,
}

type Sink = SplitSink<WebSocket, Message>;

enum Flow {
    Continue,
    Close,
}

impl Connection {
    fn new(state: AppState, caller: Caller, held: Held) -> Self {
        let now = Instant::now();
        Connection {
            state,
            caller,
            held,
            session: None,
            last_client_message: now,
            window_start: now,
            window_count: 0,
        }
    }

    async fn run(mut self, socket: WebSocket) {
        let (mut sink, mut stream) = socket.split();
        let mut idle_check = tokio::time::interval(Duration::from_secs(1));
        loop {
            let flow = tokio::select! {
                msg = stream.next() => match msg {
                    Some(Ok(msg)) => self.on_client(msg, &mut sink).await,
                    Some(Err(e)) => unreadable(e, &mut sink).await,
                    None => Flow::Close,
                },
                ev = next_event(&mut self.session) => self.on_event(ev, &mut sink).await,
                _ = idle_check.tick() => self.check_idle(&mut sink).await,
            };
            if matches!(flow, Flow::Close) {
                break;
            }
        }
        // Dropping the session handle cancels it and frees its slot.
        self.session = None;
        let _ = sink.close().await;
    }

    async fn on_client(&mut self, msg: Message, sink: &mut Sink) -> Flow {
        self.last_client_message = Instant::now();
        if !self.within_rate() {
            let f = Failure::new(ErrorCode::RateLimited, "too many messages; the connection is closed");
            send(sink, &ServerMessage::error(&f)).await;
            return Flow::Close;
        }
        let text = match msg {
            Message::Text(t) => t,
            Message::Binary(_) => {
                let f = Failure::new(
                    ErrorCode::InvalidMessage,
                    "binary messages are not accepted; send JSON text",
                );
                return self.reply(sink, &ServerMessage::error(&f)).await;
            }
            Message::Close(_) => return Flow::Close,
            Message::Ping(_) | Message::Pong(_) => return Flow::Continue,
        };
        let parsed = match parse_client_message(text.as_str()) {
            Ok(m) => m,
            Err(f) => return self.reply(sink, &ServerMessage::error(&f)).await,
        };
        let result = match parsed {
            ClientMessage::Start(start) => self.start(start).await,
            ClientMessage::Text { text } => self.append(text),
            ClientMessage::End {} => self.end(),
            ClientMessage::Cancel {} => {
                if let Some(mut s) = self.session.take() {
                    s.handle.cancel();
                    let f = Failure::new(ErrorCode::Cancelled, "the session was cancelled by the client");
                    send(sink, &ServerMessage::error(&f)).await;
                }
                Ok(())
            }
        };
        match result {
            Ok(()) => Flow::Continue,
            Err(f) => self.reply(sink, &ServerMessage::error(&f)).await,
        }
    }

    fn within_rate(&mut self) -> bool {
        if self.window_start.elapsed() >= Duration::from_secs(1) {
            self.window_start = Instant::now();
            self.window_count = 0;
        }
        self.window_count += 1;
        self.window_count <= self.state.config.limits.max_ws_messages_per_second
    }

    async fn start(&mut self, mut start: StartMessage) -> Result<(), Failure> {
        if self.session.is_some() {
            return Err(Failure::new(
                ErrorCode::SessionActive,
                "a session is already running on this socket",
            ));
        }
        let format = match start.format.as_deref() {
            None | Some("pcm16") | Some("pcm") => "pcm16",
            Some("opus") => "opus",
            Some(other) => {
                return Err(Failure::invalid("format", format!("`{other}` is not `pcm16` or `opus`")))
            }
        };
        let voice = match inline_voice(self.state.clone(), &mut start).await? {
            Some(v) => Some(v),
            None => lookup(&self.state, &self.caller, start.voice.as_deref(), "voice").await?,
        };
        let request =
            self.state.validator().build_with_voice(&start.fields(), None, TextMode::Streaming, voice)?;
        let encoder = match format {
            "opus" => Some(
                stream_encoder(AudioFormat::Opus, SAMPLE_RATE)
                    .map_err(|e| Failure::new(ErrorCode::EncoderError, e.to_string()))?,
            ),
            _ => None,
        };
        let slot = self.state.keys.acquire(self.caller.key)?;
        let handle = self.state.scheduler.submit(request, tracing::info_span!("stream", format))?;
        tracing::info!(sid = handle.sid, format, "WebSocket session started");
        self.session = Some(Active {
            handle,
            encoder,
            format,
            send_codes: start.codes,
            text_ended: false,
            segment: 0,
            _slot: slot,
        });
        if let Some(text) = start.text.filter(|t| !t.is_empty()) {
            // A refused first text refuses the start: no session is left waiting on the socket.
            self.append(text).inspect_err(|_| self.session = None)?;
        }
        Ok(())
    }

    /// More text. A stream's text has no total limit: it rolls over to a new utterance at a
    /// sentence end before the cache fills (one message is bounded by
    /// `limits.max_ws_message_bytes`).
    fn append(&mut self, text: String) -> Result<(), Failure> {
        let model = self.state.model.clone();
        let s = self.session.as_mut().ok_or_else(no_session)?;
        if s.text_ended {
            return Err(Failure::new(ErrorCode::TextEnded, "text came after `end`"));
        }
        if let Some(tok) = model.tokenizer.find_reserved(&text) {
            return Err(Failure::invalid("text", format!("contains the reserved token `{tok}`")));
        }
        s.handle.append_text(text)
    }

    fn end(&mut self) -> Result<(), Failure> {
        let s = self.session.as_mut().ok_or_else(no_session)?;
        if s.text_ended {
            return Ok(());
        }
        s.text_ended = true;
        s.handle.end_text()
    }

    async fn on_event(&mut self, ev: Option<SessionEvent>, sink: &mut Sink) -> Flow {
        let Some(s) = self.session.as_mut() else { return Flow::Continue };
        match ev {
            Some(SessionEvent::Started { queued_ms }) => {
                let msg = ServerMessage::Started {
                    session_id: format!("{:x}", s.handle.sid),
                    format: s.format,
                    sample_rate: SAMPLE_RATE,
                    samples_per_frame: crate::audio::FRAME_SAMPLES as u32,
                    queued_ms,
                };
                self.reply(sink, &msg).await
            }
            Some(SessionEvent::Frame(f)) => {
                if f.segment != s.segment {
                    s.segment = f.segment;
                    if let Flow::Close = self.reply(sink, &ServerMessage::Segment { index: f.segment }).await
                    {
                        return Flow::Close;
                    }
                }
                let Some(s) = self.session.as_mut() else { return Flow::Continue };
                if let Some(a) = &self.held.access {
                    a.add_frames(1);
                }
                let bytes = match s.encoder.as_mut() {
                    Some(enc) => match enc.push(&f.pcm) {
                        Ok(b) => b,
                        Err(e) => {
                            return self
                                .fail(sink, Failure::new(ErrorCode::EncoderError, e.to_string()))
                                .await
                        }
                    },
                    None => PcmStream::encode(&f.pcm),
                };
                let codes = s.send_codes.then_some(ServerMessage::Codes { frame: f.index, codes: f.codes });
                // A client that stops reading would block this send for ever (its session is
                // cancelled by the worker's backpressure); give up on the socket after a while.
                let patience = Duration::from_secs(self.state.config.limits.ws_idle_timeout_s);
                if !bytes.is_empty() {
                    let sent = tokio::time::timeout(patience, sink.send(Message::Binary(bytes.into()))).await;
                    if !matches!(sent, Ok(Ok(()))) {
                        return Flow::Close;
                    }
                }
                match codes {
                    Some(c) => self.reply(sink, &c).await,
                    None => Flow::Continue,
                }
            }
            Some(SessionEvent::Done(stats)) => {
                let mut s = self.session.take().expect("checked above");
                if let Some(enc) = s.encoder.as_mut() {
                    if let Ok(tail) = enc.finish() {
                        if !tail.is_empty() && sink.send(Message::Binary(tail.into())).await.is_err() {
                            return Flow::Close;
                        }
                    }
                }
                tracing::info!(
                    sid = s.handle.sid,
                    frames = stats.frames,
                    reason = stats.reason_str(),
                    "WebSocket session done"
                );
                let msg = ServerMessage::Done {
                    frames: stats.frames,
                    audio_ms: stats.audio_ms(),
                    ttfa_ms: stats.ttfa_ms,
                    rtf: stats.rtf(),
                    finish_reason: stats.reason_str(),
                };
                self.reply(sink, &msg).await
            }
            Some(SessionEvent::Error(f)) => self.fail(sink, f).await,
            None => {
                self.fail(sink, Failure::new(ErrorCode::SessionLost, "the session ended unexpectedly")).await
            }
        }
    }

    async fn fail(&mut self, sink: &mut Sink, f: Failure) -> Flow {
        if let Some(s) = self.session.take() {
            tracing::info!(sid = s.handle.sid, code = %f.code, "WebSocket session failed");
            if let Some(a) = &self.held.access {
                a.set_error(f.code);
            }
        }
        self.reply(sink, &ServerMessage::error(&f)).await
    }

    /// A session waiting for text that never comes would hold its GPU slot for ever.
    async fn check_idle(&mut self, sink: &mut Sink) -> Flow {
        let timeout = Duration::from_secs(self.state.config.limits.ws_idle_timeout_s);
        let waiting = self.session.as_ref().is_some_and(|s| !s.text_ended);
        if waiting && self.last_client_message.elapsed() > timeout {
            let f =
                Failure::new(ErrorCode::IdleTimeout, format!("no text or `end` for {} s", timeout.as_secs()));
            return self.fail(sink, f).await;
        }
        Flow::Continue
    }

    async fn reply(&mut self, sink: &mut Sink, msg: &ServerMessage) -> Flow {
        if send(sink, msg).await {
            Flow::Continue
        } else {
            Flow::Close
        }
    }
}

async fn next_event(session: &mut Option<Active>) -> Option<SessionEvent> {
    match session {
        Some(s) => s.handle.recv().await,
        None => std::future::pending().await,
    }
}

/// Sends one message. Every `error` goes out through here, so this is where it is counted.
async fn send(sink: &mut Sink, msg: &ServerMessage) -> bool {
    if let ServerMessage::Error { code, .. } = msg {
        code.count();
    }
    let text = serde_json::to_string(msg).expect("server messages serialise");
    sink.send(Message::Text(text.into())).await.is_ok()
}

fn no_session() -> Failure {
    Failure::new(ErrorCode::NoSession, "send a `start` message first")
}

/// The voice of a `start` that carries `ref_audio` (one-off cloning; nothing is stored).
async fn inline_voice(state: AppState, start: &mut StartMessage) -> Result<Option<VoiceSpec>, Failure> {
    let Some(b64) = start.ref_audio.take() else {
        if start.ref_text.is_some() {
            return Err(Failure::invalid("ref_text", "needs `ref_audio`"));
        }
        return Ok(None);
    };
    if let Some(f) = Encoders::refusal(&state.model) {
        return Err(f.with_field("ref_audio"));
    }
    if start.voice.as_deref().is_some_and(|v| !v.trim().is_empty()) {
        return Err(Failure::invalid("ref_audio", "give either `voice` or `ref_audio`, not both"));
    }
    let audio = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| Failure::invalid("ref_audio", format!("not base64: {e}")))?;
    let text = check_transcript(&state.model, &state.config.limits, start.ref_text.take(), "ref_text")?;
    let cloned = state.encoders.clone().clone_voice_async(audio, text, "ref_audio").await?;
    check_reference_fits(&state, cloned.reference.as_ref().map_or(0, |r| r.codes.len()))
        .map_err(|f| f.with_field("ref_audio"))?;
    Ok(Some(match cloned.reference {
        Some(reference) => VoiceSpec::Icl { x_vector: cloned.x_vector, reference },
        None => VoiceSpec::Vector(cloned.x_vector),
    }))
}

/// A frame the socket could not read: over `limits.max_ws_message_bytes` (close code 1009) or a
/// protocol violation (1002). The client is told why before the socket closes.
async fn unreadable(e: axum::Error, sink: &mut Sink) -> Flow {
    let text = e.to_string();
    // tungstenite reports an oversize frame as a capacity error ("Message too long", "Space limit").
    let (code, failure) = if text.contains("too long") || text.contains("Space limit") {
        (
            1009,
            Failure::new(
                ErrorCode::MessageTooLarge,
                "the message is larger than limits.max_ws_message_bytes",
            ),
        )
    } else {
        (1002, Failure::new(ErrorCode::InvalidMessage, format!("unreadable WebSocket frame: {text}")))
    };
    send(sink, &ServerMessage::error(&failure)).await;
    let close = CloseFrame { code, reason: failure.code.as_str().into() };
    let _ = sink.send(Message::Close(Some(close))).await;
    Flow::Close
}

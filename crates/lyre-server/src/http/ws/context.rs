//! One context on a socket: one session of the GPU worker, a voice and an output format that
//! speaks one utterance (segment) after another in its slot. `flush` ends the current utterance
//! with the text so far and keeps the context open: later text starts the next utterance in the
//! same session, the codec decoder and the output stream (encoder, resampler, time-stretch)
//! carrying on. The context turns events into the messages to send; it does no I/O itself.

use base64::Engine as _;
use lyre_engine::prompt::TextMode;

use super::super::access_log::AccessRecord;
use super::super::auth::{Caller, KeySlot};
use super::super::output::{audio_failure, OutputFields};
use super::super::voices::lookup;
use super::super::AppState;
use super::voice::inline_voice;
use crate::audio::{AudioFormat, AudioOutput, FrameEncoder, OutputSpec};
use crate::errors::{ErrorCode, Failure};
use crate::protocol::{ServerMessage, StartMessage};
use crate::scheduler::{SessionEvent, SessionHandle};

/// Something to send to the client.
pub(super) enum Outgoing {
    Json(ServerMessage),
    Binary(Vec<u8>),
}

/// Whether a context goes on after an event or message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    Open,
    Closed,
}

pub(super) struct Context {
    pub id: String,
    session: SessionHandle,
    output: OutputSpec,
    encoder: AudioOutput,
    /// Audio goes in JSON `audio` messages rather than binary ones.
    json_audio: bool,
    send_codes: bool,
    /// `end` came: no more text.
    text_ended: bool,
    /// Frames sent on this context.
    frames: u32,
    /// The segment (utterance) of the last frame sent.
    segment: u32,
    /// The socket's access line, which counts the frames of all its contexts.
    access: Option<AccessRecord>,
    _slot: KeySlot,
}

impl Context {
    /// Validates a `start` and submits its session (429/503 at once when full).
    pub(super) async fn open(
        state: &AppState,
        caller: &Caller,
        id: String,
        mut start: StartMessage,
        json_audio: bool,
        access: Option<AccessRecord>,
    ) -> Result<Context, Failure> {
        let format = match start.format.as_deref() {
            None => AudioFormat::Pcm,
            Some(name) => name
                .parse()
                .map_err(|e: crate::audio::AudioError| Failure::invalid("format", e.to_string()))?,
        };
        let output = OutputFields {
            sample_rate: start.sample_rate,
            speed: start.speed,
            encoding: start.encoding.take(),
        }
        .spec(format)?;
        let voice = match inline_voice(state.clone(), &mut start).await? {
            Some(v) => Some(v),
            None => lookup(state, caller, start.voice.as_deref(), "voice").await?,
        };
        let request =
            state.validator().build_with_voice(&start.fields(), None, TextMode::Streaming, voice)?;
        let encoder = output.stream().map_err(audio_failure)?;
        let slot = state.keys.acquire(caller.key)?;
        let span = tracing::info_span!("stream", context = %id, format = %output.format);
        let session = state.scheduler.submit_played_at(request, span, output.playback_speed())?;
        tracing::info!(sid = session.sid, context = %id, format = %output.format, "WebSocket session started");
        let mut context = Context {
            id,
            session,
            output,
            encoder,
            json_audio,
            send_codes: start.codes,
            text_ended: false,
            frames: 0,
            segment: 0,
            access,
            _slot: slot,
        };
        if let Some(text) = start.text.filter(|t| !t.is_empty()) {
            // A refused first text refuses the start: no context is left waiting on the socket.
            context.append(state, text)?;
        }
        Ok(context)
    }

    /// The session, whose events the connection reads.
    pub(super) fn session_mut(&mut self) -> &mut SessionHandle {
        &mut self.session
    }

    /// More text may come from the client (which the idle timeout bounds).
    pub(super) fn waits_for_text(&self) -> bool {
        !self.text_ended
    }

    /// More text. A stream's text has no total limit: it rolls over to a new utterance at a
    /// sentence end before the cache fills (one message is bounded by
    /// `limits.max_ws_message_bytes`). After a flush it starts the next utterance.
    pub(super) fn append(&mut self, state: &AppState, text: String) -> Result<(), Failure> {
        if self.text_ended {
            return Err(Failure::new(ErrorCode::TextEnded, "text came after `end`"));
        }
        if let Some(tok) = state.model.tokenizer.find_reserved(&text) {
            return Err(Failure::invalid("text", format!("contains the reserved token `{tok}`")));
        }
        self.session.append_text(text)
    }

    /// `flush`: the utterance ends with the text so far; `flushed` follows its last frame.
    pub(super) fn flush(&mut self) -> Result<Vec<Outgoing>, Failure> {
        if self.text_ended {
            return Err(Failure::new(ErrorCode::TextEnded, "flush came after `end`"));
        }
        self.session.end_utterance()?;
        Ok(Vec::new())
    }

    /// `end`: the context closes once its text is spoken (`done`).
    pub(super) fn end(&mut self) -> Result<(Vec<Outgoing>, Fate), Failure> {
        if !self.text_ended {
            self.text_ended = true;
            self.session.end_text()?;
        }
        Ok((Vec::new(), Fate::Open))
    }

    /// The messages an event of the session turns into.
    pub(super) fn on_event(&mut self, ev: Option<SessionEvent>) -> (Vec<Outgoing>, Fate) {
        match ev {
            Some(SessionEvent::Started { queued_ms }) => {
                let msg = ServerMessage::Started {
                    context_id: self.id.clone(),
                    session_id: format!("{:x}", self.session.sid),
                    format: ws_format_name(self.output.format),
                    sample_rate: self.output.sample_rate,
                    samples_per_frame: self.output.samples_per_frame() as u32,
                    bytes_per_frame: self.output.bytes_per_frame().map(|b| b as u32),
                    speed: self.output.playback_speed(),
                    queued_ms,
                };
                (vec![Outgoing::Json(msg)], Fate::Open)
            }
            Some(SessionEvent::Frame(f)) => {
                let bytes = match self.encoder.push(&f.pcm) {
                    Ok(b) => b,
                    Err(e) => return self.fail(Failure::new(ErrorCode::EncoderError, e.to_string())),
                };
                if let Some(a) = &self.access {
                    a.add_frames(1);
                }
                let mut out = Vec::with_capacity(3);
                if f.segment != self.segment {
                    self.segment = f.segment;
                    out.push(Outgoing::Json(ServerMessage::Segment {
                        context_id: self.id.clone(),
                        index: f.segment,
                    }));
                }
                if !bytes.is_empty() {
                    out.push(self.audio(bytes));
                }
                if self.send_codes {
                    let codes = ServerMessage::Codes {
                        context_id: self.id.clone(),
                        frame: self.frames,
                        codes: f.codes,
                    };
                    out.push(Outgoing::Json(codes));
                }
                self.frames += 1;
                (out, Fate::Open)
            }
            Some(SessionEvent::Flushed { frames }) => (
                vec![Outgoing::Json(ServerMessage::Flushed { context_id: self.id.clone(), frames })],
                Fate::Open,
            ),
            Some(SessionEvent::Done(stats)) => {
                tracing::info!(
                    sid = self.session.sid,
                    context = %self.id,
                    frames = stats.frames,
                    reason = stats.reason_str(),
                    "WebSocket session done"
                );
                let mut out = self.finish_stream();
                out.push(Outgoing::Json(ServerMessage::Done {
                    context_id: self.id.clone(),
                    frames: stats.frames,
                    audio_ms: stats.audio_ms(),
                    ttfa_ms: stats.ttfa_ms,
                    rtf: stats.rtf(),
                    finish_reason: stats.reason_str(),
                }));
                (out, Fate::Closed)
            }
            Some(SessionEvent::Error(f)) => self.fail(f),
            None => self.fail(Failure::new(ErrorCode::SessionLost, "the session ended unexpectedly")),
        }
    }

    /// An `error` about this context, which closes it.
    pub(super) fn fail(&mut self, f: Failure) -> (Vec<Outgoing>, Fate) {
        tracing::info!(sid = self.session.sid, context = %self.id, code = %f.code, "WebSocket session failed");
        if let Some(a) = &self.access {
            a.set_error(f.code);
        }
        (vec![Outgoing::Json(ServerMessage::error_in(Some(&self.id), &f))], Fate::Closed)
    }

    /// Audio bytes: a binary message, or an `audio` message carrying them in base64.
    fn audio(&self, bytes: Vec<u8>) -> Outgoing {
        if !self.json_audio {
            return Outgoing::Binary(bytes);
        }
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        Outgoing::Json(ServerMessage::Audio { context_id: self.id.clone(), frame: self.frames, data })
    }

    /// The end of the audio stream: what the encoder and its stages still hold (the final Ogg
    /// page, the resampler's delayed tail).
    fn finish_stream(&mut self) -> Vec<Outgoing> {
        match self.encoder.finish() {
            Ok(tail) if !tail.is_empty() => vec![self.audio(tail)],
            _ => Vec::new(),
        }
    }
}

/// The WebSocket's name for a format: raw PCM is `pcm16` there.
fn ws_format_name(format: AudioFormat) -> &'static str {
    match format {
        AudioFormat::Pcm => "pcm16",
        other => other.as_str(),
    }
}

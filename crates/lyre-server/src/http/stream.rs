//! Turning a session's events into HTTP responses: a whole clip, a chunked audio stream, or
//! Server-Sent Events.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::sse::{Event, Sse};
use base64::Engine as _;
use futures_util::stream::{self, Stream};

use super::access_log::AccessRecord;
use super::auth::KeySlot;
use super::output::audio_failure;
use crate::audio::{FrameEncoder, OutputSpec};
use crate::errors::{ErrorCode, Failure};
use crate::scheduler::{DoneStats, FrameEvent, SessionEvent, SessionHandle};

/// A finished session's output.
#[derive(Debug)]
pub struct Clip {
    pub samples: Vec<f32>,
    pub codes: Vec<[u16; 16]>,
    pub stats: DoneStats,
}

/// Reads events until the session ends; gives up after `timeout` (cancelling the session).
pub async fn collect(handle: &mut SessionHandle, timeout: Duration) -> Result<Clip, Failure> {
    let work = async {
        let (mut samples, mut codes) = (Vec::new(), Vec::new());
        loop {
            match handle.recv().await {
                // HTTP requests never flush.
                Some(SessionEvent::Started { .. } | SessionEvent::Flushed { .. }) => {}
                Some(SessionEvent::Frame(f)) => {
                    samples.extend_from_slice(&f.pcm);
                    codes.push(f.codes);
                }
                Some(SessionEvent::Done(stats)) => return Ok(Clip { samples, codes, stats }),
                Some(SessionEvent::Error(f)) => return Err(f),
                None => return Err(Failure::new(ErrorCode::SessionLost, "the session ended unexpectedly")),
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            handle.cancel();
            Err(Failure::new(
                ErrorCode::Timeout,
                format!("synthesis took longer than {} s", timeout.as_secs()),
            ))
        }
    }
}

struct Streaming {
    handle: SessionHandle,
    encoder: Box<dyn FrameEncoder>,
    done: bool,
    /// Report each segment's start ([`Piece::Segment`]) before its audio.
    report_segments: bool,
    /// The segment of the last frame, and a frame held back while its segment is reported.
    segment: Option<u32>,
    held: Option<FrameEvent>,
    _slot: KeySlot,
    /// Frames and a mid-stream error go into the request's access line.
    access: Option<AccessRecord>,
}

/// What a stream yields next.
enum Piece {
    Audio(Vec<u8>),
    /// The frames that follow belong to this segment.
    Segment(u32),
}

impl Streaming {
    /// The next chunk of encoded audio, or the end. `Err` aborts the response mid-stream, the
    /// only way a chunked HTTP body can report a failure after its status was sent; it is
    /// counted here, as an error response is where it is sent.
    async fn next_chunk(&mut self) -> Option<Result<Vec<u8>, Failure>> {
        loop {
            match self.next_piece().await? {
                Ok(Piece::Audio(b)) => return Some(Ok(b)),
                Ok(Piece::Segment(_)) => {}
                Err(f) => return Some(Err(f)),
            }
        }
    }

    /// [`Streaming::next_chunk`], with each segment's start reported before its first audio
    /// when `report_segments` is set; a failure is counted and noted in the access line.
    async fn next_piece(&mut self) -> Option<Result<Piece, Failure>> {
        let piece = self.read_piece().await;
        if let Some(Err(f)) = &piece {
            f.code.count();
            if let Some(a) = &self.access {
                a.set_error(f.code);
            }
        }
        piece
    }

    async fn read_piece(&mut self) -> Option<Result<Piece, Failure>> {
        if let Some(f) = self.held.take() {
            if let Some(piece) = self.encode(&f) {
                return Some(piece);
            }
        }
        if self.done {
            return None;
        }
        loop {
            match self.handle.recv().await {
                Some(SessionEvent::Started { .. } | SessionEvent::Flushed { .. }) => {}
                Some(SessionEvent::Frame(f)) => {
                    if self.report_segments && self.segment != Some(f.segment) {
                        self.segment = Some(f.segment);
                        let segment = f.segment;
                        self.held = Some(f);
                        return Some(Ok(Piece::Segment(segment)));
                    }
                    if let Some(piece) = self.encode(&f) {
                        return Some(piece);
                    }
                }
                Some(SessionEvent::Done(_)) => {
                    self.done = true;
                    return match self.encoder.finish() {
                        Ok(b) if b.is_empty() => None,
                        Ok(b) => Some(Ok(Piece::Audio(b))),
                        Err(e) => Some(Err(Failure::new(ErrorCode::EncoderError, e.to_string()))),
                    };
                }
                Some(SessionEvent::Error(f)) => {
                    self.done = true;
                    return Some(Err(f));
                }
                None => {
                    self.done = true;
                    return Some(Err(Failure::new(ErrorCode::SessionLost, "the session ended unexpectedly")));
                }
            }
        }
    }
}

impl Streaming {
    /// A frame's encoded audio (`None` while the encoder buffers it).
    fn encode(&mut self, f: &FrameEvent) -> Option<Result<Piece, Failure>> {
        if let Some(a) = &self.access {
            a.add_frames(1);
        }
        match self.encoder.push(&f.pcm) {
            Ok(b) if b.is_empty() => None,
            Ok(b) => Some(Ok(Piece::Audio(b))),
            Err(e) => Some(Err(Failure::new(ErrorCode::EncoderError, e.to_string()))),
        }
    }
}

fn streaming(
    handle: SessionHandle,
    output: &OutputSpec,
    slot: KeySlot,
    access: Option<AccessRecord>,
) -> Result<Streaming, Failure> {
    let encoder = Box::new(output.stream().map_err(audio_failure)?);
    Ok(Streaming {
        handle,
        encoder,
        done: false,
        report_segments: false,
        segment: None,
        held: None,
        _slot: slot,
        access,
    })
}

/// Encoded audio sent chunk by chunk as frames are generated.
pub fn chunked_body(
    handle: SessionHandle,
    output: &OutputSpec,
    slot: KeySlot,
    access: Option<AccessRecord>,
) -> Result<Body, Failure> {
    let state = streaming(handle, output, slot, access)?;
    let chunks = stream::unfold(state, |mut s| async move {
        let item = s.next_chunk().await?;
        Some((item.map(Bytes::from).map_err(|f| std::io::Error::other(f.to_string())), s))
    });
    Ok(Body::from_stream(chunks))
}

/// OpenAI's `stream_format: "sse"`: `speech.audio.delta` events with base64 audio, then
/// `speech.audio.done` with usage, or an `error` event. A text spoken in several segments also
/// gets `speech.progress` (`segment` of `segments`) as each segment's audio begins.
pub fn sse(
    handle: SessionHandle,
    output: &OutputSpec,
    slot: KeySlot,
    input_tokens: usize,
    segments: usize,
    access: Option<AccessRecord>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    let mut streaming = streaming(handle, output, slot, access)?;
    streaming.report_segments = segments > 1;
    let state = (streaming, false);
    let events = stream::unfold(state, move |(mut s, finished)| async move {
        if finished {
            return None;
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let (json, last) = match s.next_piece().await {
            Some(Ok(Piece::Audio(bytes))) => {
                (serde_json::json!({ "type": "speech.audio.delta", "audio": b64.encode(bytes) }), false)
            }
            Some(Ok(Piece::Segment(i))) => {
                (serde_json::json!({ "type": "speech.progress", "segment": i, "segments": segments }), false)
            }
            Some(Err(f)) => {
                (serde_json::json!({ "type": "error", "error": super::error::error_body(&f)["error"] }), true)
            }
            None => {
                let usage = serde_json::json!({
                    "input_tokens": input_tokens, "output_tokens": 0, "total_tokens": input_tokens
                });
                (serde_json::json!({ "type": "speech.audio.done", "usage": usage }), true)
            }
        };
        Some((Ok(Event::default().data(json.to_string())), (s, last)))
    });
    Ok(Sse::new(events))
}

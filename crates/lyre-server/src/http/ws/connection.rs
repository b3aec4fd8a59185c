//! One socket: its contexts, the client's messages routed to them, their events sent back, and
//! the keep-alive and idle rules.

use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};

use super::super::access_log::AccessRecord;
use super::super::auth::Caller;
use super::super::listener::ConnectionSlot;
use super::super::sockets::SocketSlot;
use super::super::AppState;
use super::context::{Context, Fate, Outgoing};
use super::wire::{close_code, close_with, json_message, send, unreadable, Sink};
use crate::errors::{ErrorCode, Failure};
use crate::protocol::{
    parse_client_message, ClientMessage, ServerMessage, StartMessage, DEFAULT_CONTEXT_ID,
    MAX_CONTEXT_ID_CHARS,
};
use crate::scheduler::SessionEvent;

/// What the upgraded request hands over to its socket: its access line (written when the socket
/// closes) and its place under `server.max_connections`.
pub(super) struct Held {
    pub access: Option<AccessRecord>,
    pub _slot: Option<ConnectionSlot>,
}

pub(super) struct Connection {
    state: AppState,
    caller: Caller,
    held: Held,
    /// Set by the socket's first successful `start`: several contexts at once, JSON audio.
    multiplex: Option<bool>,
    contexts: Vec<Context>,
    /// Any message from the client, pings and pongs included.
    last_client_message: Instant,
    /// When the socket last had no context (its opening, or the end of its last context).
    idle_since: Option<Instant>,
    /// Pings sent since the client's last pong.
    unanswered_pings: u32,
    window_start: Instant,
    window_count: u32,
    _slot: SocketSlot,
}

enum Flow {
    Continue,
    Close,
}

impl Connection {
    pub(super) fn new(state: AppState, caller: Caller, slot: SocketSlot, held: Held) -> Self {
        let now = Instant::now();
        Connection {
            state,
            caller,
            held,
            multiplex: None,
            contexts: Vec::new(),
            last_client_message: now,
            idle_since: Some(now),
            unanswered_pings: 0,
            window_start: now,
            window_count: 0,
            _slot: slot,
        }
    }

    pub(super) async fn run(mut self, socket: WebSocket) {
        let (mut sink, mut stream) = socket.split();
        let mut idle_check = tokio::time::interval(Duration::from_secs(1));
        let ping_every = Duration::from_secs(self.state.config.server.ws_ping_interval_s);
        let mut pings = (!ping_every.is_zero())
            .then(|| tokio::time::interval_at(tokio::time::Instant::now() + ping_every, ping_every));
        loop {
            let flow = tokio::select! {
                msg = stream.next() => match msg {
                    Some(Ok(msg)) => self.on_client(msg, &mut sink).await,
                    Some(Err(e)) => {
                        unreadable(e, &mut sink).await;
                        Flow::Close
                    }
                    None => Flow::Close,
                },
                (i, ev) = next_event(&mut self.contexts) => self.on_event(i, ev, &mut sink).await,
                _ = idle_check.tick() => self.check_idle(&mut sink).await,
                _ = next_tick(&mut pings) => self.ping(&mut sink).await,
            };
            if matches!(flow, Flow::Close) {
                break;
            }
        }
        // Dropping the contexts cancels their sessions and frees their slots.
        self.contexts.clear();
        let _ = sink.close().await;
    }

    async fn on_client(&mut self, msg: Message, sink: &mut Sink) -> Flow {
        self.last_client_message = Instant::now();
        if !self.within_rate() {
            let f = Failure::new(ErrorCode::RateLimited, "too many messages; the connection is closed");
            close_with(sink, close_code::POLICY, &f).await;
            return Flow::Close;
        }
        let text = match msg {
            Message::Text(t) => t,
            Message::Binary(_) => {
                let f = Failure::new(
                    ErrorCode::InvalidMessage,
                    "binary messages are not accepted; send JSON text",
                );
                return reply(sink, &ServerMessage::error(&f)).await;
            }
            Message::Close(_) => return Flow::Close,
            // Pings are answered by the WebSocket layer itself.
            Message::Ping(_) => return Flow::Continue,
            Message::Pong(_) => {
                self.unanswered_pings = 0;
                return Flow::Continue;
            }
        };
        let parsed = match parse_client_message(text.as_str()) {
            Ok(m) => m,
            Err(f) => return reply(sink, &ServerMessage::error(&f)).await,
        };
        // An error names the context the message was about: the one it named, the id a `start`
        // would have opened, or the socket's only context.
        let only = (self.contexts.len() == 1).then(|| self.contexts[0].id.clone());
        let (named, result) = match parsed {
            ClientMessage::Start(start) => {
                let named = Some(start.context_id.clone().unwrap_or_else(|| DEFAULT_CONTEXT_ID.to_string()));
                (named, self.start(start).await.map(|()| Vec::new()))
            }
            ClientMessage::Text { text, context_id } => {
                let state = self.state.clone();
                let r = self.find(context_id.as_deref()).and_then(|i| self.contexts[i].append(&state, text));
                (context_id, r.map(|()| Vec::new()))
            }
            ClientMessage::Flush { context_id } => {
                let r = self.find(context_id.as_deref()).and_then(|i| self.contexts[i].flush());
                (context_id, r)
            }
            ClientMessage::End { context_id } => {
                let r = self.find(context_id.as_deref()).and_then(|i| {
                    let (out, fate) = self.contexts[i].end()?;
                    if fate == Fate::Closed {
                        self.contexts.remove(i);
                    }
                    Ok(out)
                });
                (context_id, r)
            }
            ClientMessage::Cancel { context_id } => {
                let r = self.find(context_id.as_deref()).map(|i| self.cancel(i));
                (context_id, r)
            }
        };
        match result {
            Ok(out) => self.send_all(sink, out).await,
            Err(f) => reply(sink, &ServerMessage::error_in(named.or(only).as_deref(), &f)).await,
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

    async fn start(&mut self, start: StartMessage) -> Result<(), Failure> {
        let id = start.context_id.clone().unwrap_or_else(|| DEFAULT_CONTEXT_ID.to_string());
        if id.is_empty() || id.chars().count() > MAX_CONTEXT_ID_CHARS {
            return Err(Failure::invalid(
                "context_id",
                format!("must be 1 to {MAX_CONTEXT_ID_CHARS} characters"),
            ));
        }
        let multiplex = match (self.multiplex, start.multiplex) {
            (Some(m), Some(asked)) if m != asked => {
                return Err(Failure::invalid(
                    "multiplex",
                    format!("the socket's first `start` set multiplex to {m}; it cannot change"),
                ));
            }
            (Some(m), _) => m,
            (None, asked) => asked.unwrap_or(false),
        };
        if !multiplex && !self.contexts.is_empty() {
            return Err(Failure::new(
                ErrorCode::SessionActive,
                "a session is already running on this socket",
            ));
        }
        if self.contexts.iter().any(|c| c.id == id) {
            return Err(Failure::new(ErrorCode::ContextActive, format!("context `{id}` is already open"))
                .with_field("context_id"));
        }
        let max = self.state.config.limits.max_ws_contexts;
        if self.contexts.len() >= max {
            return Err(Failure::new(
                ErrorCode::TooManyContexts,
                format!("this socket already has {max} contexts open (limits.max_ws_contexts)"),
            ));
        }
        let access = self.held.access.clone();
        let context = Context::open(&self.state, &self.caller, id, start, multiplex, access).await?;
        self.multiplex = Some(multiplex);
        self.idle_since = None;
        self.contexts.push(context);
        Ok(())
    }

    /// The context a message names, or the only open one when it names none.
    fn find(&self, id: Option<&str>) -> Result<usize, Failure> {
        match id {
            Some(id) => self.contexts.iter().position(|c| c.id == id).ok_or_else(|| {
                Failure::new(ErrorCode::NoSession, format!("no context `{id}` is open; send a `start` first"))
                    .with_field("context_id")
            }),
            None => match self.contexts.len() {
                0 => Err(Failure::new(ErrorCode::NoSession, "send a `start` message first")),
                1 => Ok(0),
                n => Err(Failure::invalid("context_id", format!("{n} contexts are open; name one"))),
            },
        }
    }

    /// Ends context `i` at once. A multiplexed socket is told `cancelled`; a single-context one
    /// an `error` with code `cancelled`, as before contexts existed.
    fn cancel(&mut self, i: usize) -> Vec<Outgoing> {
        let context = self.contexts.remove(i);
        let id = context.id.clone();
        drop(context);
        if self.multiplex == Some(true) {
            vec![Outgoing::Json(ServerMessage::Cancelled { context_id: id })]
        } else {
            let f = Failure::new(ErrorCode::Cancelled, "the session was cancelled by the client");
            vec![Outgoing::Json(ServerMessage::error_in(Some(&id), &f))]
        }
    }

    async fn on_event(&mut self, i: usize, ev: Option<SessionEvent>, sink: &mut Sink) -> Flow {
        let (out, fate) = self.contexts[i].on_event(ev);
        if fate == Fate::Closed {
            self.contexts.remove(i);
        }
        self.send_all(sink, out).await
    }

    async fn send_all(&mut self, sink: &mut Sink, out: Vec<Outgoing>) -> Flow {
        // A client that stops reading would block a send for ever (its sessions are cancelled
        // by the worker's backpressure); give up on the socket after a while.
        let patience = Duration::from_secs(self.state.config.limits.ws_idle_timeout_s);
        for item in out {
            let msg = match item {
                Outgoing::Binary(bytes) => Message::Binary(bytes.into()),
                Outgoing::Json(m) => json_message(&m),
            };
            if !matches!(tokio::time::timeout(patience, sink.send(msg)).await, Ok(Ok(()))) {
                return Flow::Close;
            }
        }
        Flow::Continue
    }

    /// Contexts waiting for text that never comes would hold their GPU slots for ever, and a
    /// socket that never opens one would hold its connection for ever.
    async fn check_idle(&mut self, sink: &mut Sink) -> Flow {
        let timeout = Duration::from_secs(self.state.config.limits.ws_idle_timeout_s);
        if self.contexts.is_empty() && self.idle_since.get_or_insert_with(Instant::now).elapsed() > timeout {
            let f = Failure::new(
                ErrorCode::IdleTimeout,
                format!("no session on this socket for {} s; the connection is closed", timeout.as_secs()),
            );
            close_with(sink, close_code::IDLE, &f).await;
            return Flow::Close;
        }
        if self.last_client_message.elapsed() <= timeout {
            return Flow::Continue;
        }
        let mut out = Vec::new();
        let f = Failure::new(ErrorCode::IdleTimeout, format!("no text or `end` for {} s", timeout.as_secs()));
        self.contexts.retain_mut(|c| {
            if !c.waits_for_text() {
                return true;
            }
            out.extend(c.fail(f.clone()).0);
            false
        });
        self.send_all(sink, out).await
    }

    /// Pings the client; one that left the last two pings unanswered is gone.
    async fn ping(&mut self, sink: &mut Sink) -> Flow {
        if self.unanswered_pings >= 2 {
            let f =
                Failure::new(ErrorCode::PingTimeout, "two pings went unanswered; the connection is closed");
            close_with(sink, close_code::IDLE, &f).await;
            return Flow::Close;
        }
        self.unanswered_pings += 1;
        match sink.send(Message::Ping(axum::body::Bytes::from_static(b"lyre"))).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Close,
        }
    }
}

async fn reply(sink: &mut Sink, msg: &ServerMessage) -> Flow {
    if send(sink, msg).await {
        Flow::Continue
    } else {
        Flow::Close
    }
}

async fn next_tick(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The next event of any context, with the context's index.
async fn next_event(contexts: &mut [Context]) -> (usize, Option<SessionEvent>) {
    if contexts.is_empty() {
        return std::future::pending().await;
    }
    let sessions = contexts
        .iter_mut()
        .enumerate()
        .map(|(i, c)| Box::pin(async move { (i, c.session_mut().recv().await) }));
    futures_util::future::select_all(sessions).await.0
}

//! Streamed text waiting for the worker to hand it to the engine, a bounded amount per turn.
//!
//! The engine measures appended text as it takes it (tokenizing to find where an utterance
//! must end), on the worker thread that also launches every tick. That costs about a
//! millisecond per kilobyte, more for one long piece: a chapter sent over the WebSocket in one
//! 64 KiB message held every stream's next tick for a third of a second on a small CPU. So the
//! worker takes text in pieces of about [`CHUNK_BYTES`] (cut after a space; a piece costs the
//! engine a few milliseconds at most on a small CPU, a third as much in all as the whole), at
//! most [`TURN_BYTES`] a turn, and what is left waits for the next turn, in order with the
//! session's later `end` and `flush`. Speech uses some fifteen bytes of text a second per
//! stream; a turn's share is two minutes of it.

use std::collections::VecDeque;

use lyre_engine::segment::pieces_after_spaces;

use super::command::TextOp;

/// Text the engine takes in one piece, at most (a little more when no space comes sooner).
pub const CHUNK_BYTES: usize = 2048;
/// Text handed to the engine in one worker turn, at most (the first op of a turn always goes).
pub const TURN_BYTES: usize = 2048;

#[derive(Default)]
pub(super) struct TextBacklog {
    ops: VecDeque<(u64, TextOp)>,
    /// Bytes handed over since the turn began.
    spent: usize,
}

impl TextBacklog {
    /// Queues a text op for session `sid`, an append cut into pieces.
    pub fn push(&mut self, sid: u64, op: TextOp) {
        match op {
            TextOp::Append(text) if text.len() > CHUNK_BYTES => {
                for piece in pieces_after_spaces(&text, CHUNK_BYTES) {
                    self.ops.push_back((sid, TextOp::Append(piece.to_string())));
                }
            }
            op => self.ops.push_back((sid, op)),
        }
    }

    /// A new turn: its budget is whole again.
    pub fn new_turn(&mut self) {
        self.spent = 0;
    }

    /// The next op, if this turn's budget allows it.
    pub fn next(&mut self) -> Option<(u64, TextOp)> {
        let cost = match self.ops.front()? {
            (_, TextOp::Append(text)) => text.len(),
            _ => 0,
        };
        if self.spent > 0 && self.spent + cost > TURN_BYTES {
            return None;
        }
        self.spent += cost;
        self.ops.pop_front()
    }

    /// Drops a session's waiting text (it was cancelled or failed).
    pub fn forget(&mut self, sid: u64) {
        self.ops.retain(|(s, _)| *s != sid);
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn appended(op: &TextOp) -> &str {
        match op {
            TextOp::Append(t) => t,
            _ => panic!("not an append"),
        }
    }

    #[test]
    fn a_turn_takes_its_budget_in_order_and_the_rest_waits() {
        let mut b = TextBacklog::default();
        let long = "word ".repeat(4000); // 20,000 bytes
        b.push(1, TextOp::Append(long.clone()));
        b.push(1, TextOp::End);
        b.push(2, TextOp::Append("hello".into()));
        let mut turns: Vec<Vec<(u64, String)>> = Vec::new();
        while !b.is_empty() {
            b.new_turn();
            let mut turn = Vec::new();
            while let Some((sid, op)) = b.next() {
                let shown = match &op {
                    TextOp::Append(t) => t.clone(),
                    TextOp::End => "<end>".into(),
                    TextOp::Flush => "<flush>".into(),
                };
                turn.push((sid, shown));
            }
            turns.push(turn);
        }
        assert!(turns.len() >= 10, "20 kB over turns of 2 kB: {} turns", turns.len());
        for turn in &turns {
            let bytes: usize = turn.iter().filter(|(_, t)| !t.starts_with('<')).map(|(_, t)| t.len()).sum();
            assert!(bytes <= TURN_BYTES, "{bytes} bytes in one turn");
        }
        let all: Vec<(u64, String)> = turns.concat();
        let text: String =
            all.iter().filter(|(s, t)| *s == 1 && !t.starts_with('<')).map(|(_, t)| t.as_str()).collect();
        assert_eq!(text, long);
        let tail: Vec<&(u64, String)> = all.iter().rev().take(2).collect();
        assert_eq!(*tail[1], (1, "<end>".to_string()), "the end comes after all of its text");
        assert_eq!(*tail[0], (2, "hello".to_string()));
    }

    #[test]
    fn the_first_op_of_a_turn_always_goes_and_forget_drops_a_session() {
        let mut b = TextBacklog::default();
        b.push(7, TextOp::Append("a ".repeat(1500)));
        b.push(8, TextOp::Flush);
        b.push(7, TextOp::End);
        b.new_turn();
        let (sid, op) = b.next().unwrap();
        assert_eq!((sid, appended(&op).len()), (7, 2048));
        b.forget(7);
        assert!(matches!(b.next(), Some((8, TextOp::Flush))));
        assert!(b.next().is_none() && b.is_empty());
    }
}

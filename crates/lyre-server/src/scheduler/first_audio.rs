//! Whether the next tick takes only the prompts waiting (`engine.fast_first_audio`).
//!
//! A new session's first audio comes at the end of the tick that takes its prompt. In a tick of
//! every live session that is a whole tick's time; in a tick of the waiting prompts alone (the
//! engine's `TickScope::Prompts`) it is the time of a short one, a few milliseconds. The
//! sessions left out of that tick get their next frame one short tick later, which costs their
//! listeners nothing while each has more audio in hand than the short tick and the full one
//! after it take. So the worker runs a prompt tick only when every stream that is playing has
//! that lead, and never when ticks are so slow that a stream with a single frame in hand (one
//! whose first frame is on the GPU now) could run dry waiting. Full ticks and prompt ticks are
//! timed apart: the lead a prompt tick needs is the slowest recent one of each.
//!
//! A stream's lead is counted at the server: each frame is 80 ms of audio over the request's
//! `speed` (the output stage time-stretches it), played from when it was sent or from the end of
//! the frame before, whichever is later. A client that buffers before playing has more.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use lyre_engine::TickScope;

/// The audio in one frame (1,920 samples at 24 kHz).
const FRAME_AUDIO: Duration = Duration::from_millis(80);
/// Room kept beyond the two ticks' time, for the time a frame takes to reach its client
/// (`engine.first_audio_margin_ms`).
const DEFAULT_MARGIN: Duration = Duration::from_millis(15);
/// A stream whose audio ran out longer ago than this is not playing (it waits for text) and
/// holds back nothing.
const IDLE: Duration = Duration::from_millis(500);
/// Ticks of each kind remembered: the lead needed is reckoned from the slowest of them.
const RECENT_TICKS: usize = 8;

#[derive(Debug, Clone)]
pub struct FirstAudio {
    enabled: bool,
    /// A frame's audio: [`FRAME_AUDIO`] but in tests on a slow adapter.
    frame_audio: Duration,
    /// Room kept beyond the two ticks' time.
    margin: Duration,
    full: RecentTicks,
    prompt: RecentTicks,
    /// The scope of the tick on the GPU, which the next step reads.
    in_flight: Option<TickScope>,
}

#[derive(Debug, Clone, Default)]
struct RecentTicks(VecDeque<Duration>);

impl RecentTicks {
    fn push(&mut self, took: Duration) {
        if self.0.len() == RECENT_TICKS {
            self.0.pop_front();
        }
        self.0.push_back(took);
    }

    fn slowest(&self) -> Option<Duration> {
        self.0.iter().max().copied()
    }
}

impl FirstAudio {
    pub fn new(enabled: bool) -> Self {
        FirstAudio {
            enabled,
            frame_audio: FRAME_AUDIO,
            margin: DEFAULT_MARGIN,
            full: RecentTicks::default(),
            prompt: RecentTicks::default(),
            in_flight: None,
        }
    }

    /// With `margin` kept beyond the two ticks' time instead of [`DEFAULT_MARGIN`].
    pub fn with_margin(self, margin: Duration) -> Self {
        FirstAudio { margin, ..self }
    }

    /// As if each frame held `frame_audio` of audio (tests on an adapter slower than real time).
    #[cfg(test)]
    pub fn with_frame_audio(enabled: bool, frame_audio: Duration) -> Self {
        FirstAudio { frame_audio, ..FirstAudio::new(enabled) }
    }

    /// When a stream's audio runs out after a frame sent at `now`, if it ran out at `end` before,
    /// for a client that plays `speed` times as fast as the audio was made.
    pub fn audio_end_after_frame(&self, end: Option<Instant>, now: Instant, speed: f32) -> Instant {
        end.map_or(now, |e| e.max(now)) + self.frame_audio.div_f64(f64::from(speed.max(0.01)))
    }

    /// A step took `took` to read its tick, having launched one of `launched`'s scope
    /// (`left_in_flight`: on the GPU still, for the next step to read). Returns the scope of the
    /// tick it read: the one the step before left, or else the one it launched itself.
    pub fn stepped(
        &mut self,
        took: Duration,
        launched: TickScope,
        left_in_flight: bool,
        made_frames: bool,
    ) -> TickScope {
        let read = self.in_flight.take().unwrap_or(launched);
        self.in_flight = left_in_flight.then_some(launched);
        if made_frames {
            self.tick_took(took, read);
        }
        read
    }

    /// A tick of `scope` that made frames took `took`, from its launch to its results.
    pub fn tick_took(&mut self, took: Duration, scope: TickScope) {
        match scope {
            TickScope::All => self.full.push(took),
            TickScope::Prompts => self.prompt.push(took),
        }
    }

    /// The audio every playing stream must have in hand for a prompt tick: the prompt tick and
    /// the full one after it (the slowest recent of each; a full one's time until a prompt tick
    /// has been timed), and the margin.
    pub fn lead_needed(&self) -> Duration {
        let full = self.full.slowest().unwrap_or_default();
        full + self.prompt.slowest().unwrap_or(full) + self.margin
    }

    /// The next tick's scope. `prompts_waiting`: sessions whose next tick feeds a prompt;
    /// `tick_in_flight`: a tick is on the GPU (the prompt tick follows it at once); `audio_ends`:
    /// when each live stream's audio sent so far runs out (`None` before its first frame).
    pub fn scope(
        &self,
        now: Instant,
        prompts_waiting: usize,
        tick_in_flight: bool,
        audio_ends: impl IntoIterator<Item = Option<Instant>>,
    ) -> TickScope {
        if !self.enabled || prompts_waiting == 0 || !tick_in_flight {
            return TickScope::All;
        }
        let need = self.lead_needed();
        if need > self.frame_audio {
            return TickScope::All;
        }
        let short = audio_ends.into_iter().flatten().any(|end| end + IDLE > now && end < now + need);
        if short {
            TickScope::All
        } else {
            TickScope::Prompts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn with_ticks(ticks: &[u64]) -> FirstAudio {
        let mut f = FirstAudio::new(true);
        for &t in ticks {
            f.tick_took(MS * t as u32, TickScope::All);
        }
        f
    }

    #[test]
    fn the_margin_adds_to_the_lead_a_prompt_tick_needs() {
        let f = with_ticks(&[20, 25, 22]).with_margin(40 * MS);
        assert_eq!(f.lead_needed(), 90 * MS, "two 25-ms ticks and the margin");
        // More than a frame's audio: no stream could have it in hand after its first frame.
        let now = Instant::now();
        assert_eq!(f.scope(now, 1, true, [Some(now + 500 * MS)]), TickScope::All);
        let f = with_ticks(&[20, 25, 22]).with_margin(20 * MS);
        assert_eq!(f.scope(now, 1, true, [Some(now + 71 * MS)]), TickScope::Prompts);
        assert_eq!(f.scope(now, 1, true, [Some(now + 69 * MS)]), TickScope::All);
    }

    #[test]
    fn prompts_alone_when_every_playing_stream_has_two_ticks_in_hand() {
        let f = with_ticks(&[20, 25, 22]);
        assert_eq!(f.lead_needed(), 65 * MS);
        let now = Instant::now();
        let playing = [Some(now + 300 * MS), Some(now + 66 * MS), None];
        assert_eq!(f.scope(now, 1, true, playing), TickScope::Prompts);
    }

    #[test]
    fn a_stream_short_of_audio_keeps_everyone_in_the_tick() {
        let f = with_ticks(&[20, 25, 22]);
        let now = Instant::now();
        assert_eq!(f.scope(now, 1, true, [Some(now + 300 * MS), Some(now + 60 * MS)]), TickScope::All);
        // Already run dry a moment ago (an underrun): still counts.
        assert_eq!(f.scope(now, 1, true, [Some(now - 100 * MS)]), TickScope::All);
    }

    #[test]
    fn a_stream_silent_for_long_is_not_playing() {
        let f = with_ticks(&[20]);
        let now = Instant::now() + Duration::from_secs(2);
        assert_eq!(f.scope(now, 1, true, [Some(now - 600 * MS), Some(now + 200 * MS)]), TickScope::Prompts);
    }

    #[test]
    fn nothing_to_gain_or_too_slow_or_off() {
        let now = Instant::now();
        let far = [Some(now + Duration::from_secs(5))];
        let f = with_ticks(&[20]);
        assert_eq!(f.scope(now, 0, true, far), TickScope::All, "no prompt waits");
        assert_eq!(f.scope(now, 2, false, far), TickScope::All, "nothing on the GPU: one tick takes all");
        // Ticks of 35 ms: a stream whose first frame is on the GPU would have 80 ms in hand,
        // less than the 85 ms of a prompt tick and a full one.
        assert_eq!(with_ticks(&[35]).scope(now, 1, true, far), TickScope::All);
        assert_eq!(with_ticks(&[32]).scope(now, 1, true, far), TickScope::Prompts);
        let mut off = FirstAudio::new(false);
        off.tick_took(MS, TickScope::All);
        assert_eq!(off.scope(now, 1, true, far), TickScope::All);
    }

    #[test]
    fn the_slowest_of_the_last_eight_ticks_counts() {
        let mut f = with_ticks(&[50]);
        assert_eq!(f.lead_needed(), 115 * MS);
        for _ in 0..RECENT_TICKS {
            f.tick_took(10 * MS, TickScope::All);
        }
        assert_eq!(f.lead_needed(), 35 * MS);
    }

    #[test]
    fn prompt_ticks_are_timed_apart_from_full_ones() {
        // Full ticks of 40 ms: too slow while a prompt tick is taken to be as long.
        let mut f = with_ticks(&[40]);
        let now = Instant::now();
        let far = [Some(now + Duration::from_secs(5))];
        assert_eq!(f.scope(now, 1, true, far), TickScope::All);
        f.tick_took(12 * MS, TickScope::Prompts);
        assert_eq!(f.lead_needed(), 67 * MS);
        assert_eq!(f.scope(now, 1, true, far), TickScope::Prompts);
    }

    #[test]
    fn a_step_times_the_tick_it_read() {
        let mut f = FirstAudio::new(true);
        // Pipelined: the first step reads the tick it launched; later ones the one before.
        assert_eq!(f.stepped(30 * MS, TickScope::All, true, true), TickScope::All);
        assert_eq!(f.stepped(31 * MS, TickScope::Prompts, true, true), TickScope::All);
        assert_eq!(f.stepped(9 * MS, TickScope::All, true, true), TickScope::Prompts);
        assert_eq!(f.stepped(50 * MS, TickScope::All, true, false), TickScope::All);
        assert_eq!(f.full.slowest(), Some(31 * MS), "a step without frames is not timed");
        assert_eq!(f.prompt.slowest(), Some(9 * MS));
        // Unpipelined: each step reads its own.
        f.stepped(8 * MS, TickScope::Prompts, false, true);
        f.stepped(7 * MS, TickScope::Prompts, false, true);
        assert_eq!(f.prompt.0.len(), 2, "the in-flight All tick was read by the first of them");
    }

    #[test]
    fn audio_runs_on_from_the_later_of_the_send_and_the_last_end() {
        let now = Instant::now();
        let f = FirstAudio::new(true);
        assert_eq!(f.audio_end_after_frame(None, now, 1.0), now + FRAME_AUDIO);
        assert_eq!(f.audio_end_after_frame(Some(now + 200 * MS), now, 1.0), now + 280 * MS);
        assert_eq!(f.audio_end_after_frame(Some(now - 200 * MS), now, 1.0), now + FRAME_AUDIO);
        // Played twice as fast, a frame lasts 40 ms; at half speed, 160.
        assert_eq!(f.audio_end_after_frame(Some(now + 200 * MS), now, 2.0), now + 240 * MS);
        assert_eq!(f.audio_end_after_frame(None, now, 0.5), now + 160 * MS);
    }
}

//! `lyre synth`'s progress while it speaks a long text: segments done, seconds of audio, speed
//! against real time and the time left. A bar on a terminal; one line per finished segment
//! otherwise (logs, CI).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Seconds of audio per codec frame.
const FRAME_SECONDS: f64 = 0.08;

pub struct Progress {
    bar: Option<ProgressBar>,
    segments: usize,
    /// The segment being spoken and the frames so far.
    segment: u32,
    frames: u64,
    started: Instant,
}

impl Progress {
    pub fn new(segments: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(segments as u64);
            let style = ProgressStyle::with_template("{bar:30} {pos}/{len} segments · {msg} · {eta} left")
                .expect("a valid template");
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress { bar, segments, segment: 0, frames: 0, started: Instant::now() }
    }

    /// One more frame, of segment `segment`.
    pub fn frame(&mut self, segment: u32) {
        if segment != self.segment {
            self.segment_done();
            self.segment = segment;
        }
        self.frames += 1;
        if let Some(bar) = &self.bar {
            if self.frames.is_multiple_of(12) {
                bar.set_message(self.speed());
            }
        }
    }

    /// The last segment is done.
    pub fn finish(&mut self) {
        self.segment_done();
        if let Some(bar) = self.bar.take() {
            bar.finish_with_message(self.speed());
        }
    }

    fn segment_done(&mut self) {
        let done = self.segment as usize + 1;
        match &self.bar {
            Some(bar) => bar.set_position(done as u64),
            None => {
                let left = self.started.elapsed().as_secs_f64() / done as f64 * (self.segments - done) as f64;
                eprintln!("segment {done}/{}: {}, about {left:.0} s left", self.segments, self.speed());
            }
        }
    }

    /// "12.3 s of audio, 4.2× real time".
    fn speed(&self) -> String {
        let audio = self.frames as f64 * FRAME_SECONDS;
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-9);
        format!("{audio:.1} s of audio, {:.2}× real time", audio / elapsed)
    }
}

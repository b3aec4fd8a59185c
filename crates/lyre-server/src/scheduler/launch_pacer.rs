//! When the worker submits the next tick while one is on the GPU.
//!
//! The engine pipelines ticks: a step submits the next tick, then reads the one before it. If
//! the next tick is submitted as soon as the last step returns, a session that arrives a moment
//! later misses it and joins the tick after, a whole tick late. So the worker holds the launch,
//! taking commands meanwhile, until just before the GPU finishes the tick it is running, and
//! keeps the GPU busy by aiming for a small wait (`slack`) when the step then reads that tick.
//!
//! The pacer learns the hold from what it sees: each step reports how long it waited for the
//! GPU. Waiting longer than the slack means the launch could have come later; hardly waiting at
//! all means the GPU may have been idle, so the hold is halved.
//!
//! A prompt tick (`first_audio`) is far shorter than a full one, so the pacer learns a hold for
//! each: the launch after a prompt tick is held by what steps that read prompt ticks taught, and
//! a session that arrives during one still joins the next tick.

use std::time::{Duration, Instant};

use lyre_engine::TickScope;

/// The hold never grows past this, whatever a slow tick suggests.
const MAX_HOLD: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct LaunchPacer {
    /// The wait for the GPU each step aims for; zero turns holding off.
    slack: Duration,
    /// From a step's end to the next launch, while a full tick is on the GPU.
    hold: Duration,
    /// The same while a prompt tick is.
    prompt_hold: Duration,
    /// When the last step ended, if it left a tick on the GPU.
    in_flight_since: Option<Instant>,
    /// The scope of the tick on the GPU.
    in_flight: TickScope,
}

impl LaunchPacer {
    pub fn new(slack: Duration) -> Self {
        LaunchPacer {
            slack,
            hold: Duration::ZERO,
            prompt_hold: Duration::ZERO,
            in_flight_since: None,
            in_flight: TickScope::All,
        }
    }

    /// A step ended at `now` after waiting `gpu_wait` for the tick it read, of `read`'s scope;
    /// `in_flight`: it left the next tick, of `launched`'s scope, on the GPU.
    pub fn stepped(
        &mut self,
        now: Instant,
        gpu_wait: Duration,
        in_flight: bool,
        launched: TickScope,
        read: TickScope,
    ) {
        self.in_flight = launched;
        if !in_flight || self.slack.is_zero() {
            self.in_flight_since = None;
            return;
        }
        self.in_flight_since = Some(now);
        let slack = self.slack;
        let hold = match read {
            TickScope::All => &mut self.hold,
            TickScope::Prompts => &mut self.prompt_hold,
        };
        if gpu_wait < slack / 4 {
            // The GPU may have finished before the launch: by how much is unknown.
            *hold /= 2;
        } else if gpu_wait > slack {
            *hold = (*hold + (gpu_wait - slack) / 2).min(MAX_HOLD);
        } else {
            *hold = hold.saturating_sub((slack - gpu_wait) / 2);
        }
    }

    /// When to submit the next tick; `None`: now (nothing on the GPU, or holding is off).
    pub fn launch_at(&self) -> Option<Instant> {
        let hold = match self.in_flight {
            TickScope::All => self.hold,
            TickScope::Prompts => self.prompt_hold,
        };
        self.in_flight_since.map(|t| t + hold)
    }

    /// When the tick now on the GPU started (the last step's end), if holding is on.
    pub fn in_flight_since(&self) -> Option<Instant> {
        self.in_flight_since
    }

    /// The hold learnt so far.
    pub fn hold(&self) -> Duration {
        self.hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Steps of a GPU whose ticks take `tick`, with `launch` of CPU time to submit one: the
    /// wait each step sees, the time since the last step's end as the GPU runs the next tick.
    fn run(pacer: &mut LaunchPacer, tick: Duration, launch: Duration, steps: usize) -> Vec<Duration> {
        let mut now = Instant::now();
        let mut waits = Vec::new();
        for _ in 0..steps {
            let submit = pacer.hold() + launch;
            // The GPU started the tick in flight when the last step read the one before it.
            let wait = tick.saturating_sub(submit);
            now += submit + wait;
            waits.push(wait);
            pacer.stepped(now, wait, true, TickScope::All, TickScope::All);
        }
        waits
    }

    #[test]
    fn the_hold_converges_to_the_tick_less_the_launch_and_the_slack() {
        let mut pacer = LaunchPacer::new(2 * MS);
        let waits = run(&mut pacer, 25 * MS, 3 * MS, 40);
        let hold = pacer.hold();
        assert!(hold > 19 * MS && hold <= 20 * MS, "hold {hold:?}");
        let last = *waits.last().unwrap();
        assert!(last >= 2 * MS && last < 3 * MS, "the last wait {last:?}");
        assert!(waits.iter().all(|w| *w > Duration::ZERO), "the GPU never waited for a launch");
    }

    #[test]
    fn shorter_ticks_shrink_the_hold_without_idling_the_gpu_for_long() {
        let mut pacer = LaunchPacer::new(2 * MS);
        run(&mut pacer, 40 * MS, 3 * MS, 40);
        let long = pacer.hold();
        let waits = run(&mut pacer, 10 * MS, 3 * MS, 20);
        assert!(pacer.hold() < 6 * MS, "hold {:?} after ticks of 10 ms (was {long:?})", pacer.hold());
        let idle = waits.iter().filter(|w| w.is_zero()).count();
        assert!(idle <= 4, "{idle} steps found the GPU done: {waits:?}");
        assert!(waits[waits.len() - 1] >= 2 * MS);
    }

    #[test]
    fn no_hold_without_a_tick_in_flight_or_with_zero_slack() {
        let mut pacer = LaunchPacer::new(2 * MS);
        let now = Instant::now();
        pacer.stepped(now, 30 * MS, true, TickScope::All, TickScope::All);
        assert_eq!(pacer.launch_at(), Some(now + 14 * MS));
        pacer.stepped(now, 30 * MS, false, TickScope::All, TickScope::All);
        assert_eq!(pacer.launch_at(), None);

        let mut off = LaunchPacer::new(Duration::ZERO);
        off.stepped(now, 30 * MS, true, TickScope::All, TickScope::All);
        assert_eq!(off.launch_at(), None);
    }

    #[test]
    fn a_very_slow_tick_holds_at_most_the_cap() {
        let mut pacer = LaunchPacer::new(2 * MS);
        run(&mut pacer, Duration::from_secs(2), 3 * MS, 30);
        assert_eq!(pacer.hold(), MAX_HOLD);
    }

    #[test]
    fn prompt_ticks_learn_their_own_hold() {
        let mut pacer = LaunchPacer::new(2 * MS);
        run(&mut pacer, 25 * MS, 3 * MS, 40);
        let hold = pacer.hold();
        let mut now = Instant::now();
        // Full ticks of 25 ms alternate with prompt ticks of 9 ms (3 ms of each is the launch).
        for _ in 0..30 {
            // This step reads a full tick and launches a prompt tick; the next the reverse.
            let wait = (25 * MS).saturating_sub(pacer.hold() + 3 * MS);
            now += pacer.hold() + 3 * MS + wait;
            pacer.stepped(now, wait, true, TickScope::Prompts, TickScope::All);
            let wait = (9 * MS).saturating_sub(pacer.prompt_hold + 3 * MS);
            now += pacer.prompt_hold + 3 * MS + wait;
            pacer.stepped(now, wait, true, TickScope::All, TickScope::Prompts);
        }
        assert!(
            pacer.prompt_hold > 3 * MS && pacer.prompt_hold <= 4 * MS,
            "prompt hold {:?}",
            pacer.prompt_hold
        );
        assert_eq!(pacer.launch_at(), Some(now + pacer.hold()), "a full tick is on the GPU");
        assert!(pacer.hold() >= hold - MS, "the full hold {:?} stays near {hold:?}", pacer.hold());
        pacer.stepped(now, 2 * MS, true, TickScope::Prompts, TickScope::All);
        assert_eq!(pacer.launch_at(), Some(now + pacer.prompt_hold), "a prompt tick is on the GPU");
    }
}

//! GPU time per part of a tick (talker, code predictor, sampling, codec decoder), from
//! timestamps written inside the tick's compute pass where the adapter supports it.

use std::sync::Mutex;

use super::tick_plan::TickPlan;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, Readback, RowCounts};

/// The parts a tick's time is split into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Talker,
    CodePredictor,
    Sampling,
    Codec,
}

/// GPU milliseconds of the last profiled tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickProfile {
    pub talker_ms: f64,
    pub code_predictor_ms: f64,
    pub sampling_ms: f64,
    pub codec_ms: f64,
    /// With per-dispatch profiling: (kind of dispatch, total ms, count).
    pub by_kind: Vec<(String, f64, u32)>,
}

impl TickProfile {
    pub fn total_ms(&self) -> f64 {
        self.talker_ms + self.code_predictor_ms + self.sampling_ms + self.codec_ms
    }
}

/// Per-dispatch timing: the part of each top-level dispatch, and the label and part of each
/// dispatch the last tick recorded (an alternative's own, not the one it stands in for).
type PerDispatch = (Vec<Part>, Mutex<Vec<(String, Part)>>);

/// Timestamp queries at every change of [`Part`] along the dispatch list, or before every
/// dispatch that records.
pub struct Profiler {
    /// `(first dispatch, part)` of each run of dispatches timed together.
    segments: Vec<(usize, Part)>,
    per_dispatch: Option<PerDispatch>,
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readback: Readback,
    period_ns: f64,
}

impl Profiler {
    /// `None` when the adapter cannot write timestamps inside a compute pass.
    pub fn new(ctx: &GpuContext, plan: &TickPlan, per_dispatch: bool) -> Option<Self> {
        let needed = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        if !ctx.features.contains(needed) {
            return None;
        }
        let segments = segments(plan);
        // One timestamp per recorded dispatch; a query set holds at most 4096.
        let most = plan.dispatches.iter().map(Dispatch::count_most_selected).sum::<usize>();
        if per_dispatch && most >= 4000 {
            tracing::warn!(most, "too many dispatches per tick to time each one; timing the parts only");
        }
        let per_dispatch = (per_dispatch && most < 4000).then(|| {
            let parts = plan.dispatches.iter().enumerate().map(|(i, d)| part_of(plan, i, d)).collect();
            (parts, Mutex::new(Vec::new()))
        });
        let count = match per_dispatch {
            Some(_) => most as u32 + 1,
            None => segments.len() as u32 + 1,
        };
        let queries = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("tick.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count,
        });
        let resolved = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tick.timestamps.resolved"),
            size: count as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = Readback::new(ctx, "tick.timestamps.readback", count as u64 * 8);
        Some(Profiler {
            segments,
            per_dispatch,
            queries,
            resolved,
            readback,
            period_ns: ctx.queue.get_timestamp_period() as f64,
        })
    }

    /// Records the dispatches with a timestamp before each segment (or each dispatch that
    /// records) and after the last.
    pub fn record(&self, dispatches: &[Dispatch], pass: &mut wgpu::ComputePass<'_>, counts: &RowCounts) {
        if let Some((parts, ran)) = &self.per_dispatch {
            let mut ran = ran.lock().expect("profiler labels");
            ran.clear();
            for (d, &part) in dispatches.iter().zip(parts) {
                d.for_each_selected(counts, &mut |one| {
                    pass.write_timestamp(&self.queries, ran.len() as u32);
                    one.record(pass, counts);
                    ran.push((one.label.clone(), part));
                });
            }
            pass.write_timestamp(&self.queries, ran.len() as u32);
            return;
        }
        for (k, &(start, _)) in self.segments.iter().enumerate() {
            let end = self.segments.get(k + 1).map_or(dispatches.len(), |s| s.0);
            pass.write_timestamp(&self.queries, k as u32);
            for d in &dispatches[start..end] {
                d.record(pass, counts);
            }
        }
        pass.write_timestamp(&self.queries, self.segments.len() as u32);
    }

    /// Timestamps the last [`Profiler::record`] wrote.
    fn written(&self) -> usize {
        match &self.per_dispatch {
            Some((_, ran)) => ran.lock().expect("profiler labels").len() + 1,
            None => self.segments.len() + 1,
        }
    }

    /// After the pass: copies the timestamps towards the host.
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let n = self.written() as u32;
        encoder.resolve_query_set(&self.queries, 0..n, &self.resolved, 0);
        self.readback.copy_from(encoder, &self.resolved, n as u64 * 8);
    }

    /// After the submit: the time of each part.
    pub fn read(&self, ctx: &GpuContext) -> Result<TickProfile> {
        let raw = self.readback.read(ctx, self.written() as u64 * 8)?;
        let ts: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
        let ms = |k: usize| ts[k + 1].saturating_sub(ts[k]) as f64 * self.period_ns / 1e6;
        let mut p = TickProfile::default();
        let timed: Vec<(Part, f64)> = match &self.per_dispatch {
            Some((_, ran)) => {
                let ran = ran.lock().expect("profiler labels");
                for (k, (label, _)) in ran.iter().enumerate() {
                    let kind = dispatch_kind(label);
                    match p.by_kind.iter_mut().find(|(name, _, _)| *name == kind) {
                        Some(entry) => {
                            entry.1 += ms(k);
                            entry.2 += 1;
                        }
                        None => p.by_kind.push((kind, ms(k), 1)),
                    }
                }
                ran.iter().enumerate().map(|(k, &(_, part))| (part, ms(k))).collect()
            }
            None => self.segments.iter().enumerate().map(|(k, &(_, part))| (part, ms(k))).collect(),
        };
        for (part, ms) in timed {
            match part {
                Part::Talker => p.talker_ms += ms,
                Part::CodePredictor => p.code_predictor_ms += ms,
                Part::Sampling => p.sampling_ms += ms,
                Part::Codec => p.codec_ms += ms,
            }
        }
        Ok(p)
    }
}

fn part_of(plan: &TickPlan, i: usize, d: &Dispatch) -> Part {
    let st = plan.stages;
    if d.label.ends_with("sample") {
        Part::Sampling
    } else if i < st.first_code {
        Part::Talker
    } else if i < st.code_predictor {
        Part::CodePredictor
    } else {
        Part::Codec
    }
}

/// A dispatch label without its layer and step numbers, e.g. `cp.stack.gate_up`.
fn dispatch_kind(label: &str) -> String {
    label.split('.').filter(|s| s.parse::<u32>().is_err()).collect::<Vec<_>>().join(".")
}

fn segments(plan: &TickPlan) -> Vec<(usize, Part)> {
    let mut out: Vec<(usize, Part)> = Vec::new();
    for (i, d) in plan.dispatches.iter().enumerate() {
        let p = part_of(plan, i, d);
        if out.last().is_none_or(|&(_, last)| last != p) {
            out.push((i, p));
        }
    }
    out
}

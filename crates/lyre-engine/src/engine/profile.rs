//! GPU time per part of a tick (talker, code predictor, sampling, codec decoder), from
//! timestamps written inside the tick's compute pass where the adapter supports it.

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

/// Timestamp queries at every change of [`Part`] along the dispatch list (or, per dispatch,
/// before every dispatch).
pub struct Profiler {
    /// `(first dispatch, part)` of each run of dispatches timed together.
    segments: Vec<(usize, Part)>,
    /// Dispatch labels per segment when every dispatch is its own segment.
    labels: Option<Vec<String>>,
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
        let mut segments = segments(plan);
        let mut labels = None;
        if per_dispatch && plan.dispatches.len() < 4000 {
            segments = plan.dispatches.iter().enumerate().map(|(i, d)| (i, part_of(plan, i, d))).collect();
            labels = Some(plan.dispatches.iter().map(|d| d.label.clone()).collect());
        }
        let count = segments.len() as u32 + 1;
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
            labels,
            queries,
            resolved,
            readback,
            period_ns: ctx.queue.get_timestamp_period() as f64,
        })
    }

    /// Records the dispatches with a timestamp before each segment and after the last.
    pub fn record(&self, dispatches: &[Dispatch], pass: &mut wgpu::ComputePass<'_>, counts: &RowCounts) {
        for (k, &(start, _)) in self.segments.iter().enumerate() {
            let end = self.segments.get(k + 1).map_or(dispatches.len(), |s| s.0);
            pass.write_timestamp(&self.queries, k as u32);
            for d in &dispatches[start..end] {
                d.record(pass, counts);
            }
        }
        pass.write_timestamp(&self.queries, self.segments.len() as u32);
    }

    /// After the pass: copies the timestamps towards the host.
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let n = self.segments.len() as u32 + 1;
        encoder.resolve_query_set(&self.queries, 0..n, &self.resolved, 0);
        self.readback.copy_from(encoder, &self.resolved, n as u64 * 8);
    }

    /// After the submit: the time of each part.
    pub fn read(&self, ctx: &GpuContext) -> Result<TickProfile> {
        let n = self.segments.len() + 1;
        let raw = self.readback.read(ctx, n as u64 * 8)?;
        let ts: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
        let mut p = TickProfile::default();
        if let Some(labels) = &self.labels {
            for (k, label) in labels.iter().enumerate() {
                let ms = ts[k + 1].saturating_sub(ts[k]) as f64 * self.period_ns / 1e6;
                let kind = dispatch_kind(label);
                match p.by_kind.iter_mut().find(|(name, _, _)| *name == kind) {
                    Some(entry) => {
                        entry.1 += ms;
                        entry.2 += 1;
                    }
                    None => p.by_kind.push((kind, ms, 1)),
                }
            }
        }
        for (k, &(_, part)) in self.segments.iter().enumerate() {
            let ms = ts[k + 1].saturating_sub(ts[k]) as f64 * self.period_ns / 1e6;
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

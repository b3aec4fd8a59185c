//! A dispatch recorded once (pipeline + bind group) and replayed every tick with a grid that
//! depends on how many rows and sessions the tick carries.

use std::sync::Arc;

/// The row counts of one tick, which size the grids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCounts {
    /// Talker input rows (prompt rows of new sessions plus one row per continuing session).
    pub talker_rows: u32,
    /// Sessions that produce a frame this tick.
    pub sessions: u32,
}

impl RowCounts {
    /// As uploaded to the GPU `counts` buffer: [talker rows, sessions, 2 × sessions, talker
    /// rows beyond one per session].
    pub fn as_array(&self) -> [u32; 4] {
        [self.talker_rows, self.sessions, 2 * self.sessions, self.talker_rows.saturating_sub(self.sessions)]
    }
}

/// Which count a grid dimension follows. Its discriminant is the index into the GPU `counts`
/// buffer, which kernels read to mask their last tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowCount {
    Talker = 0,
    Sessions = 1,
    /// The code predictor's first step: two rows per session.
    CpPrefill = 2,
    /// Talker rows beyond one per session (prompt rows): 0 when every session is decoding.
    TalkerExtra = 3,
}

impl RowCount {
    pub fn resolve(self, c: &RowCounts) -> u32 {
        match self {
            RowCount::Talker => c.talker_rows,
            RowCount::Sessions => c.sessions,
            RowCount::CpPrefill => 2 * c.sessions,
            RowCount::TalkerExtra => c.talker_rows.saturating_sub(c.sessions),
        }
    }

    pub fn index(self) -> u32 {
        self as u32
    }
}

/// One grid dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    Fixed(u32),
    /// A persistent grid of this many workgroups, which meet at grid-wide barriers and so must
    /// all run at once. [`Dispatch::leave_persistent`] replaces it with its alternative.
    Persistent(u32),
    /// `ceil(count / per_group)` workgroups.
    Rows {
        count: RowCount,
        per_group: u32,
    },
    /// `ceil(count · times / per_group)` workgroups: a grid over all `times` rows of every
    /// session taken as one sequence (the codec's GEMM convs tile sessions' rows together).
    RowsTimes {
        count: RowCount,
        times: u32,
        per_group: u32,
    },
}

impl Extent {
    pub fn rows(count: RowCount) -> Self {
        Extent::Rows { count, per_group: 1 }
    }

    fn resolve(self, c: &RowCounts) -> u32 {
        match self {
            Extent::Fixed(n) | Extent::Persistent(n) => n,
            Extent::Rows { count, per_group } => count.resolve(c).div_ceil(per_group),
            Extent::RowsTimes { count, times, per_group } => (count.resolve(c) * times).div_ceil(per_group),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub x: Extent,
    pub y: Extent,
    pub z: Extent,
}

impl Grid {
    pub fn new(x: Extent, y: Extent) -> Self {
        Grid { x, y, z: Extent::Fixed(1) }
    }

    pub fn resolve(&self, c: &RowCounts) -> [u32; 3] {
        [self.x.resolve(c), self.y.resolve(c), self.z.resolve(c)]
    }
}

/// A pipeline, its bound resources and its grid.
pub struct Dispatch {
    pub label: String,
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub bind_group: wgpu::BindGroup,
    pub grid: Grid,
    /// Recorded instead of this dispatch when the tick has enough rows (e.g. a GEMM for
    /// prefill and large batches in place of a matrix-vector kernel): the first alternative
    /// whose `min_rows` the tick reaches, so they are kept sorted by `min_rows`, largest first.
    pub alternatives: Vec<Alternative>,
}

/// A variant of a dispatch for ticks with many rows: one or more dispatches (a split-K GEMM
/// and its reduction), each of which may have alternatives of its own.
pub struct Alternative {
    pub rows: RowCount,
    pub min_rows: u32,
    pub dispatches: Vec<Dispatch>,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch").field("label", &self.label).field("grid", &self.grid).finish()
    }
}

impl Dispatch {
    /// `d`, recorded only when `rows` has at least `min_rows` rows (a no-op below). It keeps
    /// `d`'s label, so profiles name the dispatch that runs.
    pub fn only_from(rows: RowCount, min_rows: u32, d: Dispatch) -> Dispatch {
        Dispatch {
            label: d.label.clone(),
            pipeline: d.pipeline.clone(),
            bind_group: d.bind_group.clone(),
            grid: Grid::new(Extent::Fixed(0), Extent::Fixed(0)),
            alternatives: vec![Alternative { rows, min_rows, dispatches: vec![d] }],
        }
    }

    /// Adds an alternative, keeping the list sorted by `min_rows`, largest first.
    pub fn add_alternative(&mut self, alt: Alternative) {
        let at = self.alternatives.iter().position(|a| a.min_rows < alt.min_rows);
        self.alternatives.insert(at.unwrap_or(self.alternatives.len()), alt);
    }

    /// Where this dispatch is a persistent grid, its last alternative (the one for the fewest
    /// rows) applies from now on to every tick; the others keep theirs. Returns whether it was
    /// one. For when a grid barrier gave up: the grid did not run all at once.
    pub fn leave_persistent(&mut self) -> bool {
        if !matches!(self.grid.x, Extent::Persistent(_)) {
            return false;
        }
        match self.alternatives.last_mut() {
            Some(alt) => alt.min_rows = 0,
            None => self.grid = Grid::new(Extent::Fixed(0), Extent::Fixed(0)),
        }
        true
    }

    /// Calls `f` with each dispatch that records for these counts, in order: this one, or the
    /// dispatches of the alternative the tick's rows select (recursively); none for a grid with
    /// a zero dimension.
    pub fn for_each_selected<'a>(&'a self, counts: &RowCounts, f: &mut impl FnMut(&'a Dispatch)) {
        if let Some(alt) = self.alternatives.iter().find(|a| a.rows.resolve(counts) >= a.min_rows) {
            for d in &alt.dispatches {
                d.for_each_selected(counts, f);
            }
            return;
        }
        if self.grid.resolve(counts).contains(&0) {
            return;
        }
        f(self);
    }

    /// Records this dispatch (or the alternative the tick's rows select) into `pass`; a grid
    /// with a zero dimension records nothing.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, counts: &RowCounts) {
        self.for_each_selected(counts, &mut |d| {
            let [x, y, z] = d.grid.resolve(counts);
            pass.set_pipeline(&d.pipeline);
            pass.set_bind_group(0, &d.bind_group, &[]);
            pass.dispatch_workgroups(x, y, z);
        });
    }

    /// How many dispatches this one and all its alternatives hold: at least the number any tick
    /// records.
    pub fn count_all(&self) -> usize {
        1 + self.alternatives.iter().flat_map(|a| &a.dispatches).map(Dispatch::count_all).sum::<usize>()
    }

    /// The most dispatches one tick can record for this one: itself, or the largest of its
    /// alternatives (recursively). Alternatives exclude each other, so this is what a
    /// per-dispatch profile needs timestamps for.
    pub fn count_most_selected(&self) -> usize {
        self.alternatives
            .iter()
            .map(|a| a.dispatches.iter().map(Dispatch::count_most_selected).sum::<usize>())
            .fold(1, usize::max)
    }
}

/// Records a list of dispatches in order.
pub fn record_all(dispatches: &[Dispatch], pass: &mut wgpu::ComputePass<'_>, counts: &RowCounts) {
    for d in dispatches {
        d.record(pass, counts);
    }
}

/// Where to cut `dispatches` into parts submitted one after another: the first part records
/// at least `first` dispatches for these counts (alternatives expanded), each next part four
/// times as many as the one before, the last whatever is left. Ends of all parts but the last,
/// as indices into `dispatches`; none when `first` is 0.
pub fn part_ends(dispatches: &[Dispatch], counts: &RowCounts, first: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    if first == 0 {
        return ends;
    }
    let (mut part, mut recorded) = (first, 0);
    for (i, d) in dispatches.iter().enumerate().take(dispatches.len().saturating_sub(1)) {
        d.for_each_selected(counts, &mut |_| recorded += 1);
        if recorded >= part {
            ends.push(i + 1);
            recorded = 0;
            part = part.saturating_mul(4);
        }
    }
    ends
}

/// Writes `counts` into `counts_buffer`, records `dispatches` into one compute pass, submits
/// and waits. For tests, tools and one-off work; the engine's tick records its own pass.
pub fn run_now(
    ctx: &super::GpuContext,
    counts_buffer: &wgpu::Buffer,
    counts: &RowCounts,
    dispatches: &[Dispatch],
) -> crate::error::Result<()> {
    ctx.queue.write_buffer(counts_buffer, 0, bytemuck::cast_slice(&counts.as_array()));
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("run_now"),
            timestamp_writes: None,
        });
        record_all(dispatches, &mut pass, counts);
    }
    ctx.queue.submit(Some(encoder.finish()));
    ctx.wait()
}

//! Keeping a segment's end out of the codec decoder's state (`decoder_redirect.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::Env;

pub const SOURCE: KernelSource =
    KernelSource { name: "decoder_redirect", wgsl: include_str!("decoder_redirect.wgsl") };

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    eos: u32,
    dump_slot: u32,
    session_words: u32,
    _pad: u32,
}

pub struct DecoderRedirect<'a> {
    pub label: &'a str,
    /// The talker's end-of-speech code.
    pub eos: u32,
    /// The decoder slot that takes the steps of ended sessions.
    pub dump_slot: u32,
    /// The decoder's session descriptors (their slot is rewritten).
    pub sessions: &'a wgpu::Buffer,
    /// `[session][16]` u32 codes.
    pub codes: &'a wgpu::Buffer,
    /// `[slot]` u32 flags.
    pub ended: &'a wgpu::Buffer,
}

impl DecoderRedirect<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let session_words = (std::mem::size_of::<crate::sampling::SessionDesc>() / 4) as u32;
        let params = Params { eos: self.eos, dump_slot: self.dump_slot, session_words, _pad: 0 };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[&uniform, env.counts, self.sessions, self.codes, self.ended],
        );
        Dispatch {
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Rows { count: RowCount::Sessions, per_group: 64 }, Extent::Fixed(1)),
            alternatives: Vec::new(),
        }
    }
}

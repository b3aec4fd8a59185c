//! Direct access to the engine's GPU stages, for parity tests against the reference tensors
//! and for debugging. A probe uses the engine's buffers, so it must not run while sessions
//! are live.

use super::tick::row_descriptors;
use super::Engine;
use crate::error::{EngineError, Result};
use crate::gpu::{read_buffer, run_now, Dispatch, RowCount, RowCounts};
use crate::kernels::gather::{EXTRA, NONE};
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::norm::{RmsNorm, WeightFormat};
use crate::kernels::Rows;
use crate::model::talker::TalkerWeights;
use crate::prompt::PromptRow;
use crate::sampling::{SamplingParams, SessionDesc};

/// What [`Engine::probe_code_predictor`] returns.
#[derive(Debug, Clone)]
pub struct CodePredictorProbe {
    /// Codes 1..15.
    pub codes: Vec<u32>,
    /// One logits row per step.
    pub logits: Vec<Vec<f32>>,
    /// The sum of all 16 code embeddings (the talker's next input before its text part).
    pub frame_embedding: Vec<f32>,
}

/// Final norm and codec head over every talker row (the tick itself only scores last rows).
pub(super) struct TalkerProbe {
    dispatches: Vec<Dispatch>,
    hidden: wgpu::Buffer,
    logits: wgpu::Buffer,
}

impl TalkerProbe {
    pub fn new(engine: &Engine, talker: &TalkerWeights) -> Result<Self> {
        let plan = &engine.plan;
        let env = plan.env(&engine.gpu);
        let (h, v) = (talker.shape.hidden as u32, talker.codec_vocab as u32);
        let rows = plan.limits.max_rows as u64;
        let hidden = engine.gpu.storage_zeroed("probe.hidden", rows * h as u64 * 4)?;
        let logits = engine.gpu.storage_zeroed("probe.logits", rows * v as u64 * 4)?;
        let norm = RmsNorm {
            label: "probe.norm",
            weight: &talker.norm,
            format: WeightFormat::Bf16,
            dim: h,
            eps: talker.shape.eps,
            x: Rows::dense(&plan.talker.stack.x, h),
            y: Rows::dense(&hidden, h),
            rows: RowCount::Talker,
        }
        .build(&env);
        let head = Matmul {
            label: "probe.head",
            weight: &talker.codec_head,
            bias: None,
            k: h,
            n: v,
            x: Rows::dense(&hidden, h),
            input: Input::Plain,
            y: Rows::dense(&logits, v),
            rows: RowCount::Talker,
            output: Output::Overwrite,
            activation: Activation::None,
        }
        .build(&env)?;
        Ok(TalkerProbe { dispatches: vec![norm, head], hidden, logits })
    }
}

impl Engine {
    fn probe_ready(&self) -> Result<()> {
        if !self.sessions.is_empty() {
            return Err(EngineError::Gpu("probes need an engine without live sessions".into()));
        }
        Ok(())
    }

    fn run_stages(&self, counts: RowCounts, range: std::ops::Range<usize>) -> Result<()> {
        run_now(&self.gpu, &self.plan.bufs.counts, &counts, &self.plan.dispatches[range])
    }

    /// The talker input rows (text + codec channel) of `rows` at slot 0, positions 0..
    pub fn probe_input_rows(&mut self, rows: &[PromptRow]) -> Result<Vec<f32>> {
        self.probe_ready()?;
        let mut extra = Vec::new();
        let descs = row_descriptors(0, 0, rows, &mut extra);
        self.upload_rows(&descs, &extra);
        let counts = RowCounts { talker_rows: descs.len() as u32, sessions: 0 };
        self.run_stages(counts, 0..self.plan.stages.input)?;
        let h = self.model.config.talker_config.hidden_size;
        let x: Vec<f32> = read_buffer(&self.gpu, &self.plan.talker.stack.x)?;
        Ok(x[..descs.len() * h].to_vec())
    }

    /// Runs the talker over given input embeddings (`rows × H`) at `slot`, positions
    /// `pos0..`, on top of whatever that slot's cache holds; returns the final-norm hidden
    /// state and codec-head logits of every row.
    pub fn probe_talker(&mut self, slot: u32, pos0: u32, embeds: &[f32]) -> Result<(Vec<f32>, Vec<f32>)> {
        self.probe_ready()?;
        let h = self.model.config.talker_config.hidden_size;
        let n = embeds.len() / h;
        let descs: Vec<[u32; 4]> = (0..n as u32).map(|k| [slot, pos0 + k, NONE, EXTRA | k]).collect();
        self.upload_rows(&descs, embeds);
        let counts = RowCounts { talker_rows: n as u32, sessions: 0 };
        self.run_stages(counts, 0..self.plan.stages.talker)?;
        self.ensure_talker_probe()?;
        let probe = self.talker_probe.as_ref().expect("built above");
        run_now(&self.gpu, &self.plan.bufs.counts, &counts, &probe.dispatches)?;
        let v = self.model.config.talker_config.vocab_size;
        let hidden: Vec<f32> = read_buffer(&self.gpu, &probe.hidden)?;
        let logits: Vec<f32> = read_buffer(&self.gpu, &probe.logits)?;
        Ok((hidden[..n * h].to_vec(), logits[..n * v].to_vec()))
    }

    /// The code predictor alone, greedy, for one session: from the talker's final-norm hidden
    /// state and the first code to codes 1..15, the 15 logits rows, and the frame embedding
    /// sum that becomes the talker's next input (before its text part).
    pub fn probe_code_predictor(&mut self, past_hidden: &[f32], c0: u32) -> Result<CodePredictorProbe> {
        self.probe_ready()?;
        let plan = &self.plan;
        let q = &self.gpu.queue;
        let params = SamplingParams::from_generation_config(&self.model.generation, 0).greedy();
        q.write_buffer(&plan.bufs.sessions, 0, bytemuck::bytes_of(&SessionDesc::new(0, 0, 0, &params)));
        q.write_buffer(&plan.talker.normed, 0, bytemuck::cast_slice(past_hidden));
        q.write_buffer(&plan.bufs.codes, 0, bytemuck::cast_slice(&[c0]));
        let counts = RowCounts { talker_rows: 0, sessions: 1 };
        self.run_stages(counts, plan.stages.first_code..plan.stages.code_predictor)?;
        let codes: Vec<u32> = read_buffer(&self.gpu, &plan.bufs.codes)?;
        let cv = self.model.config.talker_config.code_predictor_config.vocab_size;
        let ms = plan.limits.max_sessions;
        let all: Vec<f32> = read_buffer(&self.gpu, &plan.code_predictor.logits)?;
        let groups = all.len() / (ms * cv);
        let logits = (0..groups).map(|g| all[g * ms * cv..g * ms * cv + cv].to_vec()).collect();
        let h = self.model.config.talker_config.hidden_size;
        let acc: Vec<f32> = read_buffer(&self.gpu, &plan.bufs.acc)?;
        Ok(CodePredictorProbe { codes: codes[1..16].to_vec(), logits, frame_embedding: acc[..h].to_vec() })
    }

    fn upload_rows(&self, descs: &[[u32; 4]], extra: &[f32]) {
        let q = &self.gpu.queue;
        q.write_buffer(&self.plan.bufs.row_desc, 0, bytemuck::cast_slice(descs));
        if !extra.is_empty() {
            q.write_buffer(&self.plan.bufs.extra, 0, bytemuck::cast_slice(extra));
        }
    }

    fn ensure_talker_probe(&mut self) -> Result<()> {
        if self.talker_probe.is_none() {
            self.talker_probe = Some(TalkerProbe::new(self, &self.talker)?);
        }
        Ok(())
    }
}

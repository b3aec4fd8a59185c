//! The code predictor's part of the tick plan: fifteen steps, each a stack run over its rows, a
//! head and a sample, with the embeddings that feed the next step and the frame accumulator.

use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, RowCount};
use crate::kernels::gather::{Accumulate, CodecGather, CopyRows, Source};
use crate::kernels::layer::GridSync;
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::sample::Sample;
use crate::kernels::{Env, Rows};
use crate::model::code_predictor::CodePredictorWeights;
use crate::model::rope::RopeTables;
use crate::model::talker::TalkerWeights;
use crate::model::transformer::{KvBuffers, StackBuffers, StackRun};

/// Static row descriptors of the code predictor: step 0 has rows (i, pos 0), (i, pos 1) for
/// session i; step j ≥ 1 has row (i, pos j + 1).
pub(super) fn cp_row_descs(ctx: &GpuContext, ms: usize, groups: usize) -> Result<Vec<wgpu::Buffer>> {
    let mut out = Vec::with_capacity(groups);
    let step0: Vec<u32> = (0..ms as u32).flat_map(|i| [i, 0, 0, 0, i, 1, 0, 0]).collect();
    out.push(ctx.storage_from("cp.rows.0", &step0)?);
    for j in 1..groups as u32 {
        let rows: Vec<u32> = (0..ms as u32).flat_map(|i| [i, j + 1, 0, 0]).collect();
        out.push(ctx.storage_from(&format!("cp.rows.{j}"), &rows)?);
    }
    Ok(out)
}

pub(super) struct CpBuffers<'a> {
    pub sessions: &'a wgpu::Buffer,
    pub codes: &'a wgpu::Buffer,
    pub acc: &'a wgpu::Buffer,
    pub normed: &'a wgpu::Buffer,
    pub cp_in: Option<&'a wgpu::Buffer>,
    pub bufs: &'a StackBuffers,
    pub kv: &'a KvBuffers,
    pub rope: &'a RopeTables,
    pub row_descs: &'a [wgpu::Buffer],
    pub cp_logits: &'a wgpu::Buffer,
    pub max_sessions: usize,
    pub history: &'a wgpu::Buffer,
    pub grid: Option<GridSync<'a>>,
}

/// Fifteen steps: step 0 runs the 2-row prefill `[talker hidden, embed(c0)]`; step j ≥ 1 feeds
/// `embedding[j-1](c_j)`. Each step ends with `lm_head[j]` and a sample into code column j+1.
/// Every looked-up embedding is also added to the session's frame accumulator.
pub(super) fn code_predictor_steps(
    env: &Env,
    talker: &TalkerWeights,
    cp: &CodePredictorWeights,
    b: CpBuffers,
) -> Result<Vec<Dispatch>> {
    let th = cp.talker_hidden as u32;
    let cs = &cp.shape;
    let ch = cs.hidden as u32;
    let v = cp.vocab as u32;
    let groups = cp.heads.len();
    // Where embeddings are written: straight into the stack input, or into `cp_in` when the
    // projection maps them to the code predictor's width first.
    let input = b.cp_in.unwrap_or(&b.bufs.x);
    let mut d = Vec::new();
    for j in 0..groups {
        let rows = if j == 0 { RowCount::CpPrefill } else { RowCount::Sessions };
        let l = |n: &str| format!("cp.{j}.{n}");
        if j == 0 {
            d.push(
                CopyRows {
                    label: "cp.0.hidden_in",
                    dim: th,
                    sessions: b.sessions,
                    src: b.normed,
                    src_stride: th,
                    source: Source::Affine { first: 0, step: 1 },
                    dst: Rows::strided(input, th, 0, 2),
                    rows: RowCount::Sessions,
                }
                .build(env),
            );
        }
        let (table, dst) = if j == 0 {
            (&talker.codec_embedding, Rows::strided(input, th, 1, 2))
        } else {
            (&cp.embeddings[j - 1], Rows::dense(input, th))
        };
        d.push(
            CodecGather {
                label: &l("embed"),
                dim: th,
                code_col: j as u32,
                table,
                sessions: b.sessions,
                codes: b.codes,
                dst: Some(dst),
                acc: b.acc,
                accumulate: if j == 0 { Accumulate::Set } else { Accumulate::Add },
            }
            .build(env),
        );
        if let (Some((w, bias)), Some(cp_in)) = (&cp.projection, b.cp_in) {
            d.push(
                Matmul {
                    label: &l("projection"),
                    weight: w,
                    bias: Some(bias),
                    k: th,
                    n: ch,
                    x: Rows::dense(cp_in, th),
                    input: Input::Plain,
                    y: Rows::dense(&b.bufs.x, ch),
                    rows,
                    output: Output::Overwrite,
                    activation: Activation::None,
                }
                .build(env)?,
            );
        }
        d.extend(
            StackRun {
                label: &l("stack"),
                shape: cs,
                layers: &cp.layers,
                bufs: b.bufs,
                kv: b.kv,
                rope: b.rope,
                row_desc: &b.row_descs[j],
                rows,
                grid: b.grid,
            }
            .build(env)?,
        );
        // The last position of each session: row 2i+1 at step 0, row i afterwards. The final
        // norm is fused into the head's input load.
        let last = if j == 0 { Rows::strided(&b.bufs.x, ch, 1, 2) } else { Rows::dense(&b.bufs.x, ch) };
        let logits =
            Rows { buffer: b.cp_logits, stride: v, offset: (j * b.max_sessions) as u32 * v, row_step: 1 };
        d.push(
            Matmul {
                label: &l("head"),
                weight: &cp.heads[j],
                bias: None,
                k: ch,
                n: v,
                x: last,
                input: Input::RmsNormed { gamma: &cp.norm, eps: cs.eps },
                y: logits,
                rows: RowCount::Sessions,
                output: Output::Overwrite,
                activation: Activation::None,
            }
            .build(env)?,
        );
        d.push(
            Sample {
                label: &l("sample"),
                vocab: v,
                logits,
                code_col: j as u32 + 1,
                talker: None,
                sessions: b.sessions,
                codes: b.codes,
                history: b.history,
            }
            .build(env)?,
        );
    }
    // The last code is never fed back, but it belongs to the frame embedding.
    d.push(
        CodecGather {
            label: "cp.last_embed",
            dim: th,
            code_col: groups as u32,
            table: &cp.embeddings[groups - 1],
            sessions: b.sessions,
            codes: b.codes,
            dst: None,
            acc: b.acc,
            accumulate: Accumulate::Add,
        }
        .build(env),
    );
    Ok(d)
}

use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::gather::{
    Accumulate, CodecGather, CombineInput, CopyRows, EmbedText, Source, EXTRA, FROM_ACC, NONE,
};
use lyre_engine::kernels::Rows;
use lyre_engine::sampling::SessionDesc;

use crate::support::*;

/// Session descriptors with only `slot` and `last_row` set.
fn sessions(entries: &[(u32, u32)]) -> Vec<u32> {
    let descs: Vec<SessionDesc> = entries
        .iter()
        .map(|&(slot, last_row)| SessionDesc { slot, last_row, ..Default::default() })
        .collect();
    bytemuck::cast_slice(&descs).to_vec()
}

#[test]
fn text_embedding_gathers_across_chunks() {
    let gpu = Gpu::new();
    let mut rng = rng(21);
    let (vocab, dim, per_chunk) = (10usize, 6usize, 4usize);
    let (table, bits) = bf16_round(&randn(&mut rng, vocab * dim, 1.0));
    let chunks: Vec<wgpu::Buffer> = bits.chunks(per_chunk * dim).map(|c| gpu.buf(c)).collect();
    let ids = [9u32, 0, 4, NONE, 3, 8];
    let desc: Vec<u32> = ids.iter().flat_map(|&t| [0, 0, t, NONE]).collect();
    let (desc_b, out_b) = (gpu.buf(&desc), gpu.buf(&vec![1f32; ids.len() * dim]));
    let d = EmbedText {
        label: "embed",
        chunks: &chunks,
        rows_per_chunk: per_chunk as u32,
        vocab: vocab as u32,
        dim: dim as u32,
        row_desc: &desc_b,
        out: &out_b,
        rows: RowCount::Talker,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(RowCounts { talker_rows: ids.len() as u32, sessions: 0 }, &[d]);
    let want: Vec<f32> = ids
        .iter()
        .flat_map(|&t| if t == NONE { vec![0.0; dim] } else { table[t as usize * dim..][..dim].to_vec() })
        .collect();
    assert_close("embed_text", &gpu.read::<f32>(&out_b), &want, 0.0);
}

#[test]
fn combine_input_adds_each_kind_of_codec_part() {
    let gpu = Gpu::new();
    let mut rng = rng(22);
    let (dim, vocab) = (5usize, 7usize);
    let tp = randn(&mut rng, 5 * dim, 1.0);
    let (table, bits) = bf16_round(&randn(&mut rng, vocab * dim, 1.0));
    let acc = randn(&mut rng, 3 * dim, 1.0);
    let extra = randn(&mut rng, 2 * dim, 1.0);
    // (slot, text, codec)
    let rows = [(0u32, 1u32, NONE), (2, NONE, 6), (1, 5, FROM_ACC), (0, 2, EXTRA | 1), (2, NONE, FROM_ACC)];
    let desc: Vec<u32> = rows.iter().flat_map(|&(s, t, c)| [s, 0, t, c]).collect();
    let bufs = (gpu.buf(&desc), gpu.buf(&tp), gpu.buf(&bits), gpu.buf(&acc), gpu.buf(&extra));
    let out_b = gpu.buf(&vec![9f32; rows.len() * dim]);
    let d = CombineInput {
        label: "combine",
        dim: dim as u32,
        codec_vocab: vocab as u32,
        row_desc: &bufs.0,
        text: &bufs.1,
        codec_embedding: &bufs.2,
        acc: &bufs.3,
        extra: &bufs.4,
        out: &out_b,
        rows: RowCount::Talker,
    }
    .build(&gpu.env());
    gpu.run(RowCounts { talker_rows: rows.len() as u32, sessions: 0 }, &[d]);
    let mut want = vec![0f32; rows.len() * dim];
    for (r, &(slot, text, codec)) in rows.iter().enumerate() {
        for i in 0..dim {
            let mut v = if text == NONE { 0.0 } else { tp[r * dim + i] };
            v += match codec {
                NONE => 0.0,
                FROM_ACC => acc[slot as usize * dim + i],
                c if c & EXTRA != 0 => extra[(c & !EXTRA) as usize * dim + i],
                c => table[c as usize * dim + i],
            };
            want[r * dim + i] = v;
        }
    }
    assert_close("combine_input", &gpu.read::<f32>(&out_b), &want, 1e-6);
}

#[test]
fn copy_rows_follows_last_row_and_affine_maps() {
    let gpu = Gpu::new();
    let mut rng = rng(23);
    let dim = 70usize;
    let src = randn(&mut rng, 6 * dim, 1.0);
    let sess = gpu.buf(&sessions(&[(0, 4), (0, 1), (0, 5)]));
    let src_b = gpu.buf(&src);
    let dst_b = gpu.buf(&vec![0f32; 6 * dim]);
    let env = gpu.env();
    let last = CopyRows {
        label: "last",
        dim: dim as u32,
        sessions: &sess,
        src: &src_b,
        src_stride: dim as u32,
        source: Source::LastRow,
        dst: Rows::strided(&dst_b, dim as u32, 0, 2),
        rows: RowCount::Sessions,
    }
    .build(&env);
    let affine = CopyRows {
        label: "affine",
        dim: dim as u32,
        sessions: &sess,
        src: &src_b,
        src_stride: dim as u32,
        source: Source::Affine { first: 0, step: 1 },
        dst: Rows::strided(&dst_b, dim as u32, 1, 2),
        rows: RowCount::Sessions,
    }
    .build(&env);
    gpu.run(RowCounts { talker_rows: 0, sessions: 3 }, &[last, affine]);
    let row = |i: usize| src[i * dim..(i + 1) * dim].to_vec();
    let want: Vec<f32> = [row(4), row(0), row(1), row(1), row(5), row(2)].concat();
    assert_close("copy_rows", &gpu.read::<f32>(&dst_b), &want, 0.0);
}

#[test]
fn codec_gather_writes_rows_and_accumulates_per_slot() {
    let gpu = Gpu::new();
    let mut rng = rng(24);
    let (dim, vocab) = (6usize, 9usize);
    let (table, bits) = bf16_round(&randn(&mut rng, vocab * dim, 1.0));
    let codes: Vec<u32> = [[3u32, 8], [0, 5]]
        .iter()
        .flat_map(|c| {
            let mut row = [0u32; 16];
            row[0] = c[0];
            row[1] = c[1];
            row
        })
        .collect();
    let sess = gpu.buf(&sessions(&[(2, 0), (0, 0)]));
    let (codes_b, table_b) = (gpu.buf(&codes), gpu.buf(&bits));
    let dst_b = gpu.buf(&vec![0f32; 2 * dim]);
    let acc_b = gpu.buf(&vec![7f32; 3 * dim]);
    let env = gpu.env();
    let set = CodecGather {
        label: "set",
        dim: dim as u32,
        code_col: 0,
        table: &table_b,
        sessions: &sess,
        codes: &codes_b,
        dst: Some(Rows::dense(&dst_b, dim as u32)),
        acc: &acc_b,
        accumulate: Accumulate::Set,
    }
    .build(&env);
    let add = CodecGather {
        label: "add",
        code_col: 1,
        dst: None,
        accumulate: Accumulate::Add,
        ..set_like(&table_b, &sess, &codes_b, &acc_b, dim)
    }
    .build(&env);
    gpu.run(RowCounts { talker_rows: 0, sessions: 2 }, &[set, add]);
    let e = |c: usize| table[c * dim..(c + 1) * dim].to_vec();
    assert_close("gathered rows", &gpu.read::<f32>(&dst_b), &[e(3), e(0)].concat(), 0.0);
    let sum = |a: Vec<f32>, b: Vec<f32>| a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<f32>>();
    let want = [sum(e(0), e(5)), vec![7.0; dim], sum(e(3), e(8))].concat();
    assert_close("accumulator", &gpu.read::<f32>(&acc_b), &want, 1e-6);
}

fn set_like<'a>(
    table: &'a wgpu::Buffer,
    sess: &'a wgpu::Buffer,
    codes: &'a wgpu::Buffer,
    acc: &'a wgpu::Buffer,
    dim: usize,
) -> CodecGather<'a> {
    CodecGather {
        label: "",
        dim: dim as u32,
        code_col: 0,
        table,
        sessions: sess,
        codes,
        dst: None,
        acc,
        accumulate: Accumulate::Leave,
    }
}

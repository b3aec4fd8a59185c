use lyre_engine::kernels::elementwise::{ClampPcm, Glu};
use lyre_engine::kernels::gather::{FrameRows, RvqDequant};
use lyre_engine::kernels::seq_view::SeqView;
use rand::Rng;

use super::*;

#[test]
fn glu_matches_cpu() {
    let gpu = Gpu::new();
    let mut rng = rng(32);
    let (inter, rows, n_s) = (70usize, 3usize, 2usize);
    let x = randn(&mut rng, n_s * rows * 2 * inter, 4.0);
    let xb = gpu.buf(&x);
    let y = gpu.buf(&vec![0f32; n_s * rows * inter]);
    let sessions = gpu.sessions(&[(0, 0), (1, 1)]);
    let d = Glu {
        label: "glu",
        inter: inter as u32,
        x: SeqView::dense(&xb, 2 * inter as u32, rows as u32),
        y: SeqView::dense(&y, inter as u32, rows as u32),
        rows: rows as u32,
        sessions: &sessions,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(n_s, &[d]);
    let want: Vec<f32> = (0..n_s * rows * inter)
        .map(|i| {
            let (r, j) = (i / inter, i % inter);
            let g = x[r * 2 * inter + j] as f64;
            (g / (1.0 + (-g).exp()) * x[r * 2 * inter + inter + j] as f64) as f32
        })
        .collect();
    assert_close("glu", &gpu.read::<f32>(&y), &want, 1e-6);
}

#[test]
fn rvq_sums_codebooks_and_clamps_codes() {
    let gpu = Gpu::new();
    let mut rng = rng(33);
    let (books, size, dim, frames, n_s) = (16usize, 50usize, 6usize, 3usize, 2usize);
    let table = randn(&mut rng, books * size * dim, 1.0);
    let codes: Vec<u32> = (0..n_s * frames * books).map(|_| rng.random_range(0..60)).collect();
    let (tb, cb) = (gpu.buf(&table), gpu.buf(&codes));
    let y = gpu.buf(&vec![0f32; n_s * frames * 2 * dim]);
    let sessions = gpu.sessions(&[(1, 4), (0, 0)]);
    let d = RvqDequant {
        label: "rvq",
        table: &tb,
        books: books as u32,
        codebook_size: size as u32,
        dim: dim as u32,
        codes: &cb,
        frames: frames as u32,
        y: SeqView::dense(&y, 2 * dim as u32, frames as u32),
        sessions: &sessions,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(n_s, &[d]);
    let vector = |r: usize, q: usize| {
        let code = (codes[r * books + q] as usize).min(size - 1);
        &table[(q * size + code) * dim..(q * size + code + 1) * dim]
    };
    let mut want = Vec::new();
    for r in 0..n_s * frames {
        want.extend_from_slice(vector(r, 0));
        want.extend((0..dim).map(|d| (1..books).map(|q| vector(r, q)[d]).sum::<f32>()));
    }
    assert_close("rvq", &gpu.read::<f32>(&y), &want, 1e-6);
}

#[test]
fn clamp_and_frame_rows() {
    let gpu = Gpu::new();
    let mut rng = rng(34);
    let rows = 130usize;
    let x = randn(&mut rng, 2 * rows * 4, 3.0);
    let xb = gpu.buf(&x);
    let pcm = gpu.buf(&vec![0f32; 2 * rows]);
    let table = gpu.buf(&[0u32; 2 * 4 * 4]);
    let wrapped_table = gpu.buf(&[0u32; 2 * 4 * 4]);
    let sessions = gpu.sessions(&[(3, 10), (1, 0)]);
    let env = gpu.env();
    let clamp = ClampPcm {
        label: "clamp",
        x: SeqView::dense(&xb, 4, rows as u32),
        pcm: &pcm,
        rows: rows as u32,
        sessions: &sessions,
    };
    let frame_rows =
        FrameRows { label: "rows", frames: 4, max_pos: 12, period: 0, rows: &table, sessions: &sessions };
    let wrapped = FrameRows { period: 4, rows: &wrapped_table, ..frame_rows };
    gpu.run(2, &[clamp.build(&env).unwrap(), frame_rows.build(&env), wrapped.build(&env)]);
    let want: Vec<f32> = (0..2 * rows).map(|i| x[i * 4].clamp(-1.0, 1.0)).collect();
    assert_close("clamp", &gpu.read::<f32>(&pcm), &want, 0.0);
    let got: Vec<u32> = gpu.read(&table);
    let want_rows: Vec<u32> = [(3, 10), (3, 11), (3, 11), (3, 11), (1, 0), (1, 1), (1, 2), (1, 3)]
        .iter()
        .flat_map(|&(slot, pos)| [slot, pos, 0, 0])
        .collect();
    assert_eq!(got, want_rows, "row descriptors (positions clamped to the RoPE table)");
    let got: Vec<u32> = gpu.read(&wrapped_table);
    let want_rows: Vec<u32> = [(3, 10), (3, 11), (3, 8), (3, 9), (1, 0), (1, 1), (1, 2), (1, 3)]
        .iter()
        .flat_map(|&(slot, pos)| [slot, pos, 0, 0])
        .collect();
    assert_eq!(got, want_rows, "row descriptors (positions past the table wrapped back by the period)");
}

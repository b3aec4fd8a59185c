use lyre_engine::kernels::norm::{NormKind, SeqNorm};
use lyre_engine::kernels::seq_view::SeqView;

use super::*;

fn norm_case(kind: NormKind, dim: usize, seed: u64) {
    let gpu = Gpu::new();
    let mut rng = rng(seed);
    let (sessions_n, rows, eps) = (3usize, 5usize, 1e-5f32);
    let n = sessions_n * rows;
    // An offset, so LayerNorm's mean matters.
    let x: Vec<f32> = randn(&mut rng, n * dim, 2.0).iter().map(|v| v + 1.5).collect();
    let w = randn(&mut rng, dim, 1.0);
    let b = randn(&mut rng, dim, 1.0);
    let (xb, wb, bb) = (gpu.buf(&x), gpu.buf(&w), gpu.buf(&b));
    let stride = dim.next_multiple_of(4) as u32 + 4;
    let y = gpu.buf(&vec![0f32; n * stride as usize]);
    let sessions = gpu.sessions(&[(0, 0), (1, 4), (2, 9)]);
    let bias = (kind == NormKind::Layer).then_some(&bb);
    let d = SeqNorm {
        label: "norm",
        kind,
        weight: &wb,
        bias,
        dim: dim as u32,
        eps,
        x: SeqView::dense(&xb, dim as u32, rows as u32),
        y: SeqView::dense(&y, stride, rows as u32),
        rows: rows as u32,
        sessions: &sessions,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(sessions_n, &[d]);
    let mut want = Vec::new();
    for row in x.chunks_exact(dim) {
        let r: Vec<f64> = row.iter().map(|&v| v as f64).collect();
        let mean = if kind == NormKind::Layer { r.iter().sum::<f64>() / dim as f64 } else { 0.0 };
        let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / dim as f64;
        let inv = 1.0 / (var + eps as f64).sqrt();
        for i in 0..dim {
            let bias = if kind == NormKind::Layer { b[i] as f64 } else { 0.0 };
            want.push(((r[i] - mean) * inv * w[i] as f64 + bias) as f32);
        }
    }
    let got = dense_rows(&gpu.read::<f32>(&y), sessions_n, rows, stride as usize, dim);
    assert_close(&format!("{kind:?} norm, dim {dim}"), &got, &want, 2e-6);
}

#[test]
fn rms_norm_matches_cpu() {
    norm_case(NormKind::Rms, 45, 21);
}

#[test]
fn layer_norm_matches_cpu() {
    norm_case(NormKind::Layer, 130, 22);
}

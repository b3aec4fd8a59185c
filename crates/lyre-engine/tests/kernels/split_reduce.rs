//! A split-K GEMM whose last workgroup per tile adds the partials (`gemm_fused_reduce`) against
//! the same GEMM with the reduction as a second dispatch: the same bits for plain and SwiGLU
//! inputs (the partials are added in the same order), the same values within rounding for
//! RMS-normed ones (the sum of squares is gathered from the parts). Each case runs twice,
//! accumulating, so a tile counter left above zero (its second run finding no last workgroup)
//! would fail it, and the counters must all be zero afterwards.

use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::matmul::{Activation, Input, Matmul, Output};
use lyre_engine::kernels::select::{KernelChoice, MatmulKernel};
use lyre_engine::kernels::{Env, Rows};

use crate::support::*;

/// The split GEMMs of the kernel tests, and K split 16 ways on the tiles the defaults run.
fn split_kernels(gpu: &Gpu) -> Vec<MatmulKernel> {
    let mut kernels: Vec<MatmulKernel> = gemm_kernels().into_iter().chain(coop_kernels(gpu)).collect();
    kernels.push(MatmulKernel::Gemm { tile: GemmTile::ROWS_16, split: 16 });
    if gpu.coop_or_required() {
        kernels.push(MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE, split: 16 });
    }
    kernels.retain(|k| matches!(k, MatmulKernel::Gemm { split, .. } if *split > 1));
    kernels
}

fn choice(gpu: &Gpu, fused: bool) -> KernelChoice {
    let mut tuning = tuning();
    tuning.set("gemm_fused_reduce", if fused { "true" } else { "false" }).unwrap();
    KernelChoice::new(&gpu.ctx, &tuning)
}

#[test]
fn split_gemm_adds_its_own_partials_like_the_reduction_dispatch() {
    let gpu = Gpu::new();
    let (fused, separate) = (choice(&gpu, true), choice(&gpu, false));
    let mut rng = rng(41);
    // (rows, k, n): a few rows, one tile's rows and past it; K of 8 to 32 chunks.
    for &(rows, k, n) in &[(5usize, 512usize, 64usize), (33, 256, 96), (70, 1024, 128)] {
        let (_, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
        let (_, bbits) = bf16_round(&randn(&mut rng, n, 0.5));
        let (_, gbits) = bf16_round(&randn(&mut rng, k, 1.0));
        let (wbuf, bbuf, gbuf) = (gpu.buf(&wbits), gpu.buf(&bbits), gpu.buf(&gbits));
        let x = randn(&mut rng, rows * 2 * k, 1.0);
        let xbuf = gpu.buf(&x);
        let prior = randn(&mut rng, rows * n, 1.0);
        let inputs = [
            ("plain", Input::Plain),
            ("rms", Input::RmsNormed { gamma: &gbuf, eps: 1e-6 }),
            ("swiglu", Input::SwiGlu),
        ];
        for kernel in split_kernels(&gpu) {
            for (name, input) in inputs {
                let what = format!("{kernel:?} {name} {rows}x{k}x{n}");
                let run = |kernels: &KernelChoice, dispatches: usize| {
                    let ybuf = gpu.buf(&prior);
                    let d = Matmul {
                        label: "split",
                        weight: &wbuf,
                        bias: Some(&bbuf),
                        k: k as u32,
                        n: n as u32,
                        x: Rows::dense(&xbuf, 2 * k as u32),
                        input,
                        y: Rows::dense(&ybuf, n as u32),
                        rows: RowCount::Talker,
                        output: Output::Accumulate,
                        activation: Activation::None,
                    }
                    .build_sequence(&Env { kernels, ..gpu.env() }, kernel)
                    .unwrap();
                    assert_eq!(d.len(), dispatches, "{what}: dispatches");
                    for _ in 0..2 {
                        gpu.run(RowCounts { talker_rows: rows as u32, sessions: 0 }, &d);
                    }
                    gpu.read::<f32>(&ybuf)
                };
                let own = run(&fused, 1);
                let second = run(&separate, 2);
                if matches!(input, Input::RmsNormed { .. }) {
                    let scale = second.iter().fold(1.0f32, |m, v| m.max(v.abs()));
                    assert_close(&what, &own, &second, 1e-5 * scale);
                } else {
                    let differ = own.iter().zip(&second).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                    assert_eq!(differ, 0, "{what}: {differ} of {} outputs differ in their bits", own.len());
                }
                // Twice the product on top of the prior, not once: both runs added.
                let once: Vec<f32> = second.iter().zip(&prior).map(|(y, p)| (y - p) / 2.0 + p).collect();
                assert!(max_abs_diff(&once, &second) > 1e-2, "{what}: the case cannot tell one run from two");
            }
        }
    }
    let counters: Vec<u32> = gpu.read(&gpu.split_sync);
    assert!(counters[..16384].iter().all(|&c| c == 0), "a tile counter was left above zero");
}

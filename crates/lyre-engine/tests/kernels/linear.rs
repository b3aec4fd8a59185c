use lyre_engine::gpu::{RowCount, RowCounts};
use lyre_engine::kernels::elementwise::SwiGlu;
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::matmul::{Activation, Input, Matmul, Output};
use lyre_engine::kernels::norm::{RmsNorm, WeightFormat};
use lyre_engine::kernels::select::MatmulKernel;
use lyre_engine::kernels::Rows;

use crate::support::*;

fn cpu_matmul(x: &[f32], w: &[f32], b: Option<&[f32]>, rows: usize, k: usize, n: usize) -> Vec<f32> {
    let mut y = vec![0.0; rows * n];
    for r in 0..rows {
        for j in 0..n {
            let mut acc = 0.0f64;
            for i in 0..k {
                acc += x[r * k + i] as f64 * w[j * k + i] as f64;
            }
            y[r * n + j] = acc as f32 + b.map_or(0.0, |b| b[j]);
        }
    }
    y
}

#[test]
fn matmul_matches_cpu_on_odd_shapes() {
    let gpu = Gpu::new();
    let mut rng = rng(1);
    let mut kernels = vec![MatmulKernel::PerThread];
    let size =
        gpu.ctx.fixed_subgroup_size().expect("the adapter has subgroups of a fixed size (lavapipe: 8)");
    kernels.push(MatmulKernel::Subgroup { size });
    kernels.extend(matvec_kernels(size));
    kernels.extend(gemm_kernels());
    kernels.extend(few_rows_kernels());
    kernels.extend(coop_kernels(&gpu));
    for kernel in kernels {
        let shapes: &[(usize, usize, usize)] = if chunks_of_64(kernel) {
            // The same rows, K in chunks of 64 (up to ten).
            &[(1, 64, 1), (33, 128, 70), (70, 192, 130), (5, 256, 65), (130, 128, 140), (100, 640, 200)]
        } else if matches!(kernel, MatmulKernel::Gemm { .. }) {
            // Rows in both halves of a 64-row tile and past it, K of ten chunks (each staging
            // buffer of the cooperative tile reused four times or more).
            &[(1, 32, 1), (33, 64, 70), (70, 96, 130), (5, 256, 65), (130, 64, 140), (100, 320, 200)]
        } else if matches!(kernel, MatmulKernel::FewRows { .. }) {
            // Row counts past one pass of every quad count; K parts of unequal length.
            &[(1, 8, 1), (5, 64, 70), (9, 136, 33), (33, 520, 65), (70, 264, 9)]
        } else if matches!(kernel, MatmulKernel::Matvec { .. }) {
            &[(1, 8, 1), (3, 64, 70), (7, 136, 130), (5, 520, 33), (1, 1024, 17)]
        } else {
            &[(1, 4, 1), (3, 36, 70), (7, 100, 130), (13, 64, 65), (20, 260, 33)]
        };
        for &(rows, k, n) in shapes {
            let (w, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
            let (b, bbits) = bf16_round(&randn(&mut rng, n, 0.5));
            let x = randn(&mut rng, rows * k, 1.0);
            let prior = randn(&mut rng, rows * n, 1.0);
            let wbuf = gpu.buf(&wbits);
            let bbuf = gpu.buf(&bbits);
            let xbuf = gpu.buf(&x);
            for (bias, act, out) in [
                (false, Activation::None, Output::Overwrite),
                (true, Activation::Silu, Output::Overwrite),
                (true, Activation::None, Output::Accumulate),
            ] {
                // The product by `kernel` on a fresh copy of `prior`.
                let product = |kernel: MatmulKernel| -> Vec<f32> {
                    let ybuf = gpu.buf(&prior);
                    let d = Matmul {
                        label: "mm",
                        weight: &wbuf,
                        bias: bias.then_some(&bbuf),
                        k: k as u32,
                        n: n as u32,
                        x: Rows::dense(&xbuf, k as u32),
                        input: Input::Plain,
                        y: Rows::dense(&ybuf, n as u32),
                        rows: RowCount::Talker,
                        output: out,
                        activation: act,
                    }
                    .build_sequence(&gpu.env(), kernel)
                    .unwrap();
                    gpu.run(RowCounts { talker_rows: rows as u32, sessions: 0 }, &d);
                    gpu.read(&ybuf)
                };
                let got = product(kernel);
                if let MatmulKernel::Gemm { split, .. } = kernel {
                    if chunks_of_64(kernel) && (k / 64) % split as usize == 0 {
                        // Chunks of 64 multiply the same 16-wide blocks of K in the same order
                        // as the 64 × 128 tile's chunks of 32, and where the split's parts start
                        // at the same K, the sums are the same bit for bit.
                        let wide = MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE, split };
                        let want = product(wide);
                        assert!(
                            got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{kernel:?} against {wide:?}, {rows}x{k}x{n}: not bit for bit"
                        );
                    }
                }
                // On cooperative matrices the kernel rounds x to f16 (bf16 weights are exact in f16).
                let x_in: Vec<f32> = if is_coop(kernel) {
                    x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect()
                } else {
                    x.clone()
                };
                let mut want = cpu_matmul(&x_in, &w, bias.then_some(&b), rows, k, n);
                for (i, v) in want.iter_mut().enumerate() {
                    if act == Activation::Silu {
                        *v = *v / (1.0 + (-*v).exp());
                    }
                    if out == Output::Accumulate {
                        *v += prior[i];
                    }
                }
                assert_close(
                    &format!("{kernel:?} matmul {rows}x{k}x{n} {bias} {act:?} {out:?}"),
                    &got,
                    &want,
                    1e-4,
                );
            }
        }
    }
}

#[test]
fn matmul_reads_strided_rows() {
    let gpu = Gpu::new();
    let mut rng = rng(2);
    let (m, k, n) = (5usize, 12usize, 9usize);
    let (w, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
    let x = randn(&mut rng, 2 * m * k, 1.0);
    let odd: Vec<f32> = (0..m).flat_map(|i| x[(2 * i + 1) * k..(2 * i + 2) * k].to_vec()).collect();
    let (wbuf, xbuf, ybuf) = (gpu.buf(&wbits), gpu.buf(&x), gpu.buf(&vec![0f32; m * n]));
    let d = Matmul {
        label: "mm",
        weight: &wbuf,
        bias: None,
        k: k as u32,
        n: n as u32,
        x: Rows::strided(&xbuf, k as u32, 1, 2),
        input: Input::Plain,
        y: Rows::dense(&ybuf, n as u32),
        rows: RowCount::Sessions,
        output: Output::Overwrite,
        activation: Activation::None,
    }
    .build(&gpu.env())
    .unwrap();
    gpu.run(RowCounts { talker_rows: 0, sessions: m as u32 }, &[d]);
    assert_close("strided matmul", &gpu.read::<f32>(&ybuf), &cpu_matmul(&odd, &w, None, m, k, n), 1e-4);
}

#[test]
fn rms_norm_matches_cpu() {
    let gpu = Gpu::new();
    let mut rng = rng(3);
    for &(rows, dim) in &[(1usize, 7usize), (5, 130), (3, 1000)] {
        let x = randn(&mut rng, rows * dim, 2.0);
        let (w, wbits) = bf16_round(&randn(&mut rng, dim, 1.0));
        for format in [WeightFormat::Bf16, WeightFormat::F32] {
            let wbuf = match format {
                WeightFormat::Bf16 => gpu.buf(&wbits),
                WeightFormat::F32 => gpu.buf(&w),
            };
            let (xbuf, ybuf) = (gpu.buf(&x), gpu.buf(&vec![0f32; rows * dim]));
            let d = RmsNorm {
                label: "norm",
                weight: &wbuf,
                format,
                dim: dim as u32,
                eps: 1e-6,
                x: Rows::dense(&xbuf, dim as u32),
                y: Rows::dense(&ybuf, dim as u32),
                rows: RowCount::Talker,
            }
            .build(&gpu.env());
            gpu.run(RowCounts { talker_rows: rows as u32, sessions: 0 }, &[d]);
            let mut want = vec![0f32; rows * dim];
            for r in 0..rows {
                let row = &x[r * dim..(r + 1) * dim];
                let ms = row.iter().map(|v| v * v).sum::<f32>() / dim as f32;
                let inv = 1.0 / (ms + 1e-6).sqrt();
                for i in 0..dim {
                    want[r * dim + i] = w[i] * row[i] * inv;
                }
            }
            assert_close(&format!("rms_norm {rows}x{dim} {format:?}"), &gpu.read::<f32>(&ybuf), &want, 1e-5);
        }
    }
}

#[test]
fn swiglu_matches_cpu() {
    let gpu = Gpu::new();
    let mut rng = rng(4);
    let (rows, inter) = (3usize, 97usize);
    let gu = randn(&mut rng, rows * 2 * inter, 4.0);
    let (gbuf, obuf) = (gpu.buf(&gu), gpu.buf(&vec![0f32; rows * inter]));
    let d =
        SwiGlu { label: "swiglu", inter: inter as u32, gate_up: &gbuf, out: &obuf, rows: RowCount::Talker }
            .build(&gpu.env());
    gpu.run(RowCounts { talker_rows: rows as u32, sessions: 0 }, &[d]);
    let want: Vec<f32> = (0..rows * inter)
        .map(|i| {
            let (r, j) = (i / inter, i % inter);
            let g = gu[r * 2 * inter + j];
            g / (1.0 + (-g).exp()) * gu[r * 2 * inter + inter + j]
        })
        .collect();
    assert_close("swiglu", &gpu.read::<f32>(&obuf), &want, 1e-5);
}

#[test]
fn gemm_matmul_reads_strided_rows() {
    let gpu = Gpu::new();
    let mut rng = rng(5);
    let (m, k, n) = (40usize, 64usize, 70usize);
    let (w, wbits) = bf16_round(&randn(&mut rng, n * k, 0.5));
    let x = randn(&mut rng, 2 * m * k, 1.0);
    let odd: Vec<f32> = (0..m).flat_map(|i| x[(2 * i + 1) * k..(2 * i + 2) * k].to_vec()).collect();
    let (wbuf, xbuf, ybuf) = (gpu.buf(&wbits), gpu.buf(&x), gpu.buf(&vec![0f32; m * n]));
    let d = Matmul {
        label: "mm",
        weight: &wbuf,
        bias: None,
        k: k as u32,
        n: n as u32,
        x: Rows::strided(&xbuf, k as u32, 1, 2),
        input: Input::Plain,
        y: Rows::dense(&ybuf, n as u32),
        rows: RowCount::Sessions,
        output: Output::Overwrite,
        activation: Activation::None,
    }
    .build_sequence(&gpu.env(), MatmulKernel::Gemm { tile: GemmTile::ROWS_16, split: 2 })
    .unwrap();
    gpu.run(RowCounts { talker_rows: 0, sessions: m as u32 }, &d);
    assert_close("GEMM strided matmul", &gpu.read::<f32>(&ybuf), &cpu_matmul(&odd, &w, None, m, k, n), 1e-4);
}

use lyre_engine::gpu::RowCounts;
use lyre_engine::kernels::sample::{Sample, TalkerProcessors};
use lyre_engine::kernels::select::SampleKernel;
use lyre_engine::kernels::Rows;
use lyre_engine::sampling::{Sampler, SamplingParams, SessionDesc};
use rand::Rng;

use crate::support::*;

const V: usize = 3072;

fn params(do_sample: bool, temperature: f32, top_k: u32, top_p: f32, seed: u64) -> SamplingParams {
    let s = Sampler { do_sample, temperature, top_k, top_p };
    SamplingParams { talker: s, code_predictor: s, repetition_penalty: 1.05, seed, ignore_eos: false }
}

/// Runs the sampler over `logits` (one row per session) and returns column `col` of the codes.
fn run(
    gpu: &Gpu,
    logits: &[f32],
    vocab: usize,
    descs: &[SessionDesc],
    talker: bool,
    history: &wgpu::Buffer,
) -> Vec<u32> {
    run_with(gpu, gpu.kernels.sampler(), logits, vocab, descs, talker, history)
}

fn run_with(
    gpu: &Gpu,
    kernel: SampleKernel,
    logits: &[f32],
    vocab: usize,
    descs: &[SessionDesc],
    talker: bool,
    history: &wgpu::Buffer,
) -> Vec<u32> {
    let m = descs.len();
    let (lb, sb) = (gpu.buf(logits), gpu.buf(descs));
    let codes = gpu.buf(&vec![u32::MAX; m * 16]);
    let d = Sample {
        label: "sample",
        vocab: vocab as u32,
        logits: Rows::dense(&lb, vocab as u32),
        code_col: if talker { 0 } else { 3 },
        talker: talker.then_some(TalkerProcessors {
            eos: 2150,
            suppress_start: 2048,
            min_new_tokens: 2,
            history_words: (V / 32) as u32,
        }),
        sessions: &sb,
        codes: &codes,
        history,
    }
    .build_with(&gpu.env(), kernel)
    .unwrap();
    gpu.run(RowCounts { talker_rows: 0, sessions: m as u32 }, &[d]);
    let col = if talker { 0 } else { 3 };
    gpu.read::<u32>(&codes).chunks(16).map(|c| c[col]).collect()
}

#[test]
fn greedy_applies_talker_processors_in_order() {
    let gpu = Gpu::new();
    let mut rng = rng(31);
    let base = randn(&mut rng, V, 1.0);
    let mut rows = Vec::new();
    // 0: plain argmax. 1: a suppressed id holds the max. 2: EOS holds the max before frame 2.
    // 3: EOS holds the max at frame 2. 4: a repeated id's (positive) max is divided by 1.05.
    // 5: a tie: the first index wins.
    let mut r0 = base.clone();
    r0[17] = 9.0;
    let mut r1 = r0.clone();
    r1[2500] = 20.0;
    let mut r2 = r0.clone();
    r2[2150] = 20.0;
    let r3 = r2.clone();
    let mut r4 = r0.clone();
    r4[18] = 8.9;
    let mut r5 = base.clone();
    r5[40] = 9.0;
    r5[30] = 9.0;
    for r in [&r0, &r1, &r2, &r3, &r4, &r5] {
        rows.extend_from_slice(r);
    }
    let p = params(false, 1.0, 50, 1.0, 0);
    let descs: Vec<SessionDesc> = [(0, 0), (1, 0), (2, 1), (3, 2), (4, 5), (5, 0)]
        .iter()
        .map(|&(slot, gen)| SessionDesc::new(slot, 0, gen, &p))
        .collect();
    let mut hist = vec![0u32; 6 * V / 32];
    hist[4 * V / 32] |= 1 << 17; // slot 4 has emitted 17 before
    let hist_b = gpu.buf(&hist);
    let got = run(&gpu, &rows, V, &descs, true, &hist_b);
    assert_eq!(got, vec![17, 17, 17, 2150, 18, 30]);
    // With ignore_eos, EOS is never chosen, even after frame 2.
    let mut no_eos = p;
    no_eos.ignore_eos = true;
    let d3 = [SessionDesc::new(3, 0, 2, &no_eos)];
    let hist_b2 = gpu.buf(&vec![0u32; 6 * V / 32]);
    assert_eq!(run(&gpu, &rows[3 * V..4 * V], V, &d3, true, &hist_b2), vec![17]);
    // The chosen codes were added to each slot's history.
    let hist_after: Vec<u32> = gpu.read(&hist_b);
    assert_ne!(hist_after[V / 32 * 3 + 2150 / 32] & (1 << (2150 % 32)), 0);
}

#[test]
fn top_k_one_is_greedy_and_draws_are_reproducible() {
    let gpu = Gpu::new();
    let mut rng = rng(32);
    let m = 8;
    let logits = randn(&mut rng, m * 2048, 3.0);
    let greedy: Vec<SessionDesc> =
        (0..m).map(|i| SessionDesc::new(i as u32, 0, 0, &params(false, 1.0, 0, 1.0, 0))).collect();
    let k1: Vec<SessionDesc> =
        (0..m).map(|i| SessionDesc::new(i as u32, 0, 0, &params(true, 0.7, 1, 1.0, i as u64))).collect();
    let hist = gpu.buf(&[0u32; 4]);
    assert_eq!(run(&gpu, &logits, 2048, &greedy, false, &hist), run(&gpu, &logits, 2048, &k1, false, &hist));

    let sampled: Vec<SessionDesc> =
        (0..m).map(|i| SessionDesc::new(i as u32, 0, 3, &params(true, 1.0, 50, 0.9, 77))).collect();
    let a = run(&gpu, &logits, 2048, &sampled, false, &hist);
    // Same sessions in reverse order: each session's draw does not depend on its batch position.
    let rev_logits: Vec<f32> = logits.chunks(2048).rev().flatten().cloned().collect();
    let rev: Vec<SessionDesc> = sampled.iter().rev().cloned().collect();
    let mut b = run(&gpu, &rev_logits, 2048, &rev, false, &hist);
    b.reverse();
    assert_eq!(a, b);
}

/// Many sessions with different seeds over the same logits: every draw lies in the allowed set,
/// and the frequencies follow the renormalised probabilities.
fn distribution(top_k: u32, top_p: f32, logits_row: &[f32], allowed: &[usize], probs: &[f64]) {
    let gpu = Gpu::new();
    let m = 2000;
    let vocab = logits_row.len();
    let logits: Vec<f32> = (0..m).flat_map(|_| logits_row.to_vec()).collect();
    let descs: Vec<SessionDesc> = (0..m)
        .map(|i| SessionDesc::new(0, 0, 0, &params(true, 1.0, top_k, top_p, 1000 + i as u64)))
        .collect();
    let hist = gpu.buf(&[0u32; 4]);
    let got = run(&gpu, &logits, vocab, &descs, false, &hist);
    let mut counts = vec![0usize; vocab];
    for &c in &got {
        assert!(allowed.contains(&(c as usize)), "drew {c}, allowed {allowed:?}");
        counts[c as usize] += 1;
    }
    for (&i, &p) in allowed.iter().zip(probs) {
        let f = counts[i] as f64 / m as f64;
        let sd = (p * (1.0 - p) / m as f64).sqrt();
        assert!((f - p).abs() < 5.0 * sd + 1e-3, "token {i}: frequency {f:.3}, expected {p:.3}");
    }
}

#[test]
fn top_k_keeps_the_k_largest() {
    let mut row = vec![-5.0f32; 300];
    row[7] = 2.0;
    row[100] = 1.0;
    row[250] = 0.5;
    row[3] = 0.0; // fourth largest: cut by top_k = 3
    let z: f64 = [2.0f64, 1.0, 0.5].iter().map(|v| v.exp()).sum();
    let probs: Vec<f64> = [2.0f64, 1.0, 0.5].iter().map(|v| v.exp() / z).collect();
    distribution(3, 1.0, &row, &[7, 100, 250], &probs);
}

#[test]
fn top_p_drops_the_low_tail() {
    // Probabilities 0.5, 0.3, 0.15, 0.05: with top_p 0.7, HF removes the ascending prefix whose
    // cumulative mass is <= 0.3, i.e. 0.05 and 0.15, and renormalises 0.5 : 0.3.
    let p = [0.5f64, 0.3, 0.15, 0.05];
    let row: Vec<f32> = p.iter().map(|v| v.ln() as f32).collect();
    distribution(0, 0.7, &row, &[0, 1], &[0.625, 0.375]);
}

#[test]
fn top_k_ties_at_the_boundary_are_all_kept() {
    // The k-th largest value is tied: every entry holding it stays in (a threshold, not a sort).
    let mut row = vec![-5.0f32; 2048];
    row[900] = 2.0;
    for i in [5, 400, 1500] {
        row[i] = 1.0;
    }
    let z = 2.0f64.exp() + 3.0 * 1.0f64.exp();
    let p1 = 1.0f64.exp() / z;
    distribution(2, 1.0, &row, &[5, 400, 900, 1500], &[p1, p1, 2.0f64.exp() / z, p1]);
}

#[test]
fn all_equal_logits() {
    let row = vec![0.25f32; 3072];
    // Greedy: the first index. Top-k 7 keeps every (tied) entry: draws spread over the row.
    let gpu = Gpu::new();
    let hist = gpu.buf(&[0u32; 4]);
    let logits: Vec<f32> = (0..64).flat_map(|_| row.clone()).collect();
    let greedy: Vec<SessionDesc> =
        (0..64).map(|i| SessionDesc::new(0, 0, i, &params(false, 1.0, 7, 0.5, 0))).collect();
    assert!(run(&gpu, &logits, 3072, &greedy, false, &hist).iter().all(|&c| c == 0));
    let drawn: Vec<SessionDesc> =
        (0..64).map(|i| SessionDesc::new(0, 0, i, &params(true, 0.9, 7, 1.0, 5))).collect();
    let got = run(&gpu, &logits, 3072, &drawn, false, &hist);
    assert!(got.iter().all(|&c| c < 3072));
    assert!(got.iter().filter(|&&c| c >= 7).count() > 50, "{got:?}");
}

/// Rows that stress the fast paths: ties, equal rows, signed zeros, wide and narrow spreads.
fn stress_row(rng: &mut rand::rngs::StdRng, kind: usize, vocab: usize) -> Vec<f32> {
    match kind % 6 {
        0 => randn(rng, vocab, 3.0),
        1 => randn(rng, vocab, 3.0).iter().map(|v| (v * 2.0).round() / 2.0).collect(),
        2 => vec![-1.5; vocab],
        3 => randn(rng, vocab, 1.0)
            .iter()
            .map(|&v| if v.abs() < 0.5 { 0.0f32.copysign(v) } else { v })
            .collect(),
        4 => randn(rng, vocab, 30.0),
        _ => randn(rng, vocab, 0.01),
    }
}

/// The subgroup kernel picks exactly the portable kernel's codes, and leaves the same history.
fn same_codes(vocab: usize, talker: bool) {
    let gpu = Gpu::new();
    let Some(size) = gpu.ctx.fixed_subgroup_size() else {
        eprintln!("no fixed-size subgroups on this adapter: only the portable sampler runs");
        return;
    };
    let sg = SampleKernel::Subgroup { size };
    let mut rng = rng(40 + vocab as u64);
    let settings: [(bool, f32, u32, f32); 12] = [
        (false, 1.0, 50, 1.0),
        (true, 0.9, 50, 1.0),
        (true, 0.9, 50, 0.8),
        (true, 1.0, 0, 0.9),
        (true, 0.7, 0, 1.0),
        (true, 1.3, 1, 1.0),
        (true, 1.0, vocab as u32, 0.95),
        (true, 1.0, 100_000, 0.3),
        (true, 0.5, 3, 0.99),
        (true, 1.0, 1000, 1.0),
        (true, 2.0, 0, 0.05),
        (true, 1.0, vocab as u32 - 1, 0.7),
    ];
    // One history slot per session, as in the engine (sessions sharing a slot would race).
    let m = 96;
    let slots = m;
    for round in 0..3 {
        let mut logits = Vec::new();
        let mut descs = Vec::new();
        for i in 0..m {
            logits.extend(stress_row(&mut rng, i / settings.len() + round, vocab));
            let (s, t, k, p) = settings[i % settings.len()];
            let mut sp = params(s, t, k, p, 1000 * round as u64 + i as u64);
            sp.ignore_eos = i % 5 == 0;
            descs.push(SessionDesc::new(i as u32, 0, (i % 4) as u32, &sp));
        }
        let words = slots * 3072 / 32;
        let hist: Vec<u32> = (0..words).map(|_| rng.random::<u32>() & rng.random::<u32>()).collect();
        let (ha, hb) = (gpu.buf(&hist), gpu.buf(&hist));
        let a = run_with(&gpu, SampleKernel::Portable, &logits, vocab, &descs, talker, &ha);
        let b = run_with(&gpu, sg, &logits, vocab, &descs, talker, &hb);
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "round {round} session {i}: settings {:?}", settings[i % settings.len()]);
        }
        assert_eq!(gpu.read::<u32>(&ha), gpu.read::<u32>(&hb), "history after round {round}");
    }
}

#[test]
fn subgroup_kernel_matches_code_predictor_2048() {
    same_codes(2048, false);
}

#[test]
fn subgroup_kernel_matches_talker_3072() {
    same_codes(3072, true);
}

#[test]
fn subgroup_kernel_matches_odd_vocab() {
    same_codes(1000, false);
    same_codes(4096, false);
}

//! Against the fixtures' references: every stage of `refs/speech_decoder.safetensors`, its
//! waveform, and the waveform of each `e2e_*` case decoded from its codes.

use lyre_engine::kernels::select::KernelChoice;
use lyre_engine::EngineTuning;

use crate::support::*;

/// Stages with their reference layout: true when stored `(1, C, T)`, false for `(1, T, C)`.
const STAGES: [(&str, bool); 10] = [
    ("quantizer_out", true),
    ("pre_conv_out", true),
    ("pre_transformer_out", false),
    ("upsample_out", true),
    ("decoder0_out", true),
    ("decoder_block1_out", true),
    ("decoder_block2_out", true),
    ("decoder_block3_out", true),
    ("decoder_block4_out", true),
    ("final_conv_out_preclamp", true),
];

fn check_stages(name: &str) {
    check_stages_tuned(name, &tuning());
}

fn check_stages_tuned(name: &str, tuning: &EngineTuning) {
    let ctx = gpu();
    let refs = Refs::open(name, "speech_decoder");
    let codes = refs.frames_codebook_major("codes");
    let mut dec = decoder_tuned(&ctx, name, options(1, codes.len(), 1), tuning);
    let capture = dec.decode_clip_capture(&codes).expect("decode");
    for (stage, channel_major) in STAGES {
        let got = &capture.stages[stage];
        let want = refs.f32(stage);
        let want = if channel_major { time_major(&want, got.channels) } else { want };
        let scale = want.iter().map(|a| a.abs()).fold(1.0f32, f32::max);
        assert_close(&format!("{name} {stage} (frame by frame)"), &got.values, &want, 1e-5 * scale);
    }
    assert_close(&format!("{name} wav (frame by frame)"), &capture.pcm, &refs.f32("wav"), 1e-4);
}

#[test]
fn every_stage_matches_the_reference_custom_voice() {
    check_stages("tiny-custom-voice");
}

#[test]
fn every_stage_matches_the_reference_base() {
    check_stages("tiny-base");
}

/// With every conv on the register-tile GEMM, unsplit, each residual unit runs as one dispatch
/// (`conv1d_unit.wgsl`; the 12 Hz codec's last block takes it on GPUs with cooperative matrices).
#[test]
fn every_stage_matches_the_reference_with_each_residual_unit_fused() {
    let mut tuning = EngineTuning::default();
    for (key, value) in [
        ("conv_gemm_min_rows", "1"),
        ("conv_gemm_min_cols", "1"),
        ("conv_gemm_min_tiles", "0"),
        ("conv_gemm_max_split", "1"),
        ("conv_narrow", "off"),
        // On cooperative matrices the 128 × 128 tile's level is the last from this many sessions.
        ("conv_tall_min_sessions", "1"),
    ] {
        tuning.set(key, value).unwrap();
    }
    let kernels = KernelChoice::new(&gpu(), &tuning);
    // The tiny codec's blocks: 16, 8, 4 and 2 channels over 32, 160, 640 and 1920 rows a frame.
    for (rows_in, channels) in [(32, 16u32), (160, 8), (640, 4), (1920, 2)] {
        let chunks = 7 * channels.div_ceil(4).div_ceil(kernels.conv_tile().bk / 4);
        let from = kernels.conv_unit_fused_from(rows_in, channels, chunks, u64::MAX).map(|(from, _)| from);
        assert_eq!(from, Some(1), "a block of {channels} channels fuses from one session");
    }
    check_stages_tuned("tiny-custom-voice", &tuning);
}

/// Each `e2e_*` case's waveform from its codes; for in-context-learning cases the wrapper decodes
/// `ref_code ++ codes` and drops the first `ref_len / total_len` of the samples.
fn check_e2e(name: &str) {
    let ctx = gpu();
    let mut dec = decoder(&ctx, name, options(1, 64, 1));
    let cases = e2e_cases(name);
    assert!(!cases.is_empty(), "{name}: no e2e cases");
    for case in cases {
        let refs = Refs::open(name, &case);
        let codes = refs.frames("codes");
        let want = refs.f32("wav");
        let got = if refs.has("ref_code") {
            let reference = refs.frames("ref_code");
            let all: Vec<[u16; 16]> = reference.iter().chain(&codes).copied().collect();
            let full = dec.decode_clip(&all).expect("decode");
            let cut = (reference.len() as f64 / all.len() as f64 * full.len() as f64) as usize;
            full[cut..].to_vec()
        } else {
            dec.decode_clip(&codes).expect("decode")
        };
        assert_eq!(refs.shape("wav"), vec![got.len()], "{case}: length");
        assert_close(&format!("{name} {case} wav"), &got, &want, 1e-4);
    }
}

#[test]
fn e2e_waveforms_match_custom_voice() {
    check_e2e("tiny-custom-voice");
}

#[test]
fn e2e_waveforms_match_base() {
    check_e2e("tiny-base");
}

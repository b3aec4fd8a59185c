use std::sync::Arc;

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::{Engine, EngineOptions};

#[path = "../common/fixtures.rs"]
mod fixtures;
pub use fixtures::*;

pub fn engine(name: &str, max_sessions: usize) -> Engine {
    engine_with(name, max_sessions, true)
}

/// An engine that captures logits or not (capturing turns tick pipelining off).
pub fn engine_with(name: &str, max_sessions: usize, capture_logits: bool) -> Engine {
    engine_from(name, options(max_sessions, capture_logits))
}

pub fn options(max_sessions: usize, capture_logits: bool) -> EngineOptions {
    EngineOptions {
        max_sessions,
        max_positions: 256,
        kv_cache: lyre_engine::KvFormat::F32,
        max_rows_per_tick: 128,
        segment_tokens: 0,
        capture_logits,
        profile: false,
        profile_dispatches: false,
        inject_grid_fault: false,
        tuning: tuning(),
    }
}

pub fn engine_from(name: &str, opts: EngineOptions) -> Engine {
    let model = Arc::new(ModelDir::open(fixture(name)).expect("fixture loads"));
    Engine::new(gpu(), model, opts).expect("engine")
}

/// Asserts cosine similarity ≥ `min_cos` and max|Δ| ≤ `rel_tol` × max|reference|; returns max|Δ|.
pub fn assert_matches(what: &str, got: &[f32], want: &[f32], min_cos: f64, rel_tol: f32) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let dot: f64 = got.iter().zip(want).map(|(a, b)| *a as f64 * *b as f64).sum();
    let na: f64 = got.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = want.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
    let cos = dot / (na * nb).max(1e-30);
    let max_d = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    let scale = want.iter().map(|a| a.abs()).fold(0.0, f32::max);
    println!("{what}: cosine {cos:.8}, max|Δ| {max_d:.3e} (scale {scale:.3})");
    assert!(cos >= min_cos, "{what}: cosine {cos} < {min_cos}");
    assert!(max_d <= rel_tol * scale.max(1e-6), "{what}: max|Δ| {max_d:e} > {rel_tol} × {scale}");
    max_d
}

/// The session request that reproduces one greedy `e2e_*` reference case. Cloned voices take
/// the case's stored encoder outputs (`ref_spk_embedding`, and `ref_code` with the meta's
/// `ref_text` for the in-context-learning cases), so no encoder runs here.
pub fn case_request(fixture_name: &str, case: &str, engine: &Engine) -> Option<lyre_engine::SessionRequest> {
    use lyre_engine::prompt::{TextMode, VoiceReference, VoiceSpec};
    use lyre_engine::sampling::SamplingParams;
    let m = meta(fixture_name, case);
    let refs = Refs::open(fixture_name, case);
    let voice = match m["speaker"].as_str() {
        Some(s) => VoiceSpec::Speaker(s.to_string()),
        None if m["mode"] == "icl" => VoiceSpec::Icl {
            x_vector: refs.f32("ref_spk_embedding"),
            reference: VoiceReference {
                text: m["ref_text"].as_str().unwrap().to_string(),
                codes: frames(&refs.i64("ref_code")),
            },
        },
        None if refs.has("ref_spk_embedding") => VoiceSpec::Vector(refs.f32("ref_spk_embedding")),
        None => VoiceSpec::None,
    };
    let g = &m["gen_kwargs"];
    assert_eq!(g["do_sample"], false, "{case}: the references are greedy");
    let mut sampling = SamplingParams::from_generation_config(&engine.model().generation, 0).greedy();
    sampling.repetition_penalty = g["repetition_penalty"].as_f64().unwrap() as f32;
    Some(lyre_engine::SessionRequest {
        text: lyre_engine::TextInput::Whole(m["text"].as_str().unwrap().to_string()),
        voice,
        language: m["language"].as_str().unwrap().split(' ').next().unwrap().to_string(),
        instruct: m["instruct"].as_str().map(str::to_string),
        mode: if m["non_streaming_mode"] == true { TextMode::NonStreaming } else { TextMode::Streaming },
        sampling,
        max_frames: g["max_new_tokens"].as_u64().unwrap() as u32 - 1,
        max_frames_per_segment: None,
    })
}

/// Rows of 16 codes.
pub fn frames(codes: &[i64]) -> Vec<[u16; 16]> {
    codes.chunks(16).map(|c| std::array::from_fn(|i| c[i] as u16)).collect()
}

//! What streamed text costs the thread that drives the GPU: `Engine::append_text` of a text in
//! one piece against the same text in the server's 2 KiB pieces (`scheduler/text_backlog.rs`),
//! and of a word at a time (an LLM's output). The engine tokenizes appended text as it takes it,
//! so this is time no tick is launched.
//!
//! `cargo bench -p lyre-engine --bench text_append` (the tiny CustomVoice fixture's tokenizer,
//! the real Qwen one; `LYRE_BENCH_MODEL` another checkpoint).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::segment::pieces_after_spaces;
use lyre_engine::{Engine, EngineOptions, EngineTuning, SessionId, SessionRequest, TextInput};

const SENTENCE: &str =
    "The quick brown fox, who had never seen the sea, jumped over the lazy dog near Zürich in 1999. ";
/// The server's piece size (`scheduler::text_backlog::CHUNK_BYTES`).
const PIECE_BYTES: usize = 2048;

fn model_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("LYRE_BENCH_MODEL") {
        return PathBuf::from(p);
    }
    let shared = std::env::var_os("LYRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("fixtures/tiny-custom-voice")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tuning = EngineTuning::default().with_env(std::env::vars())?;
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    let model = Arc::new(ModelDir::open(model_dir())?);
    let opts = EngineOptions { max_sessions: 4, max_positions: 4096, tuning, ..EngineOptions::default() };
    let mut engine = Engine::new(gpu, model.clone(), opts)?;
    let voice =
        model.config.talker_config.spk_id.keys().next().cloned().map_or(VoiceSpec::None, VoiceSpec::Speaker);
    let request = SessionRequest {
        text: TextInput::Streamed,
        voice,
        language: "auto".into(),
        instruct: None,
        mode: TextMode::Streaming,
        sampling: SamplingParams::from_generation_config(&model.generation, 1),
        max_frames: u32::MAX,
        max_frames_per_segment: None,
    };
    let fresh = |engine: &mut Engine| -> Result<SessionId, Box<dyn std::error::Error>> {
        Ok(engine.start(request.clone())?)
    };
    // Warm the tokenizer's caches.
    let id = fresh(&mut engine)?;
    engine.append_text(id, &SENTENCE.repeat(10))?;
    engine.cancel(id);
    println!(
        "{:>10} {:>14} {:>22} {:>16}",
        "bytes", "one piece ms", "2 KiB pieces ms (all)", "worst piece ms"
    );
    for n in [10usize, 100, 680] {
        let text = SENTENCE.repeat(n);
        let id = fresh(&mut engine)?;
        let t = Instant::now();
        engine.append_text(id, &text)?;
        let whole = t.elapsed().as_secs_f64() * 1e3;
        engine.cancel(id);
        let id = fresh(&mut engine)?;
        let (mut worst, t) = (0f64, Instant::now());
        for piece in pieces_after_spaces(&text, PIECE_BYTES) {
            let p = Instant::now();
            engine.append_text(id, piece)?;
            worst = worst.max(p.elapsed().as_secs_f64() * 1e3);
        }
        let split = t.elapsed().as_secs_f64() * 1e3;
        engine.cancel(id);
        println!("{:>10} {whole:>14.2} {split:>22.2} {worst:>16.2}", text.len());
    }
    let id = fresh(&mut engine)?;
    let words: Vec<&str> = SENTENCE.split_inclusive(' ').collect();
    let t = Instant::now();
    for _ in 0..20 {
        for w in &words {
            engine.append_text(id, w)?;
        }
    }
    let each = t.elapsed().as_secs_f64() * 1e6 / (20 * words.len()) as f64;
    println!("a word at a time: {each:.1} µs a word");
    Ok(())
}

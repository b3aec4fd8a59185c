//! The real-size encoder (0.6B Base manifest config) with random weights: a timing, not a check
//! of values. `cargo test --release -p lyre-engine --test speech_encoder -- --ignored`.

use std::time::Instant;

use lyre_engine::checkpoint::config::SpeechTokenizerConfig;
use lyre_engine::checkpoint::expected::speech_tokenizer_tensors;
use lyre_engine::checkpoint::weights::WeightFile;
use lyre_engine::speech_encoder::SpeechEncoder;
use safetensors::tensor::{Dtype, TensorView};

use crate::support::shared;

/// Small deterministic pseudo-random numbers in [-1, 1).
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn fake_tensor(name: &str, shape: &[usize], seed: u64) -> Vec<f32> {
    let n: usize = shape.iter().product();
    let ones = name.ends_with("cluster_usage") || name.ends_with("initialized");
    if ones || (name.contains("layernorm") && name.ends_with("weight")) {
        return vec![1.0; n];
    }
    if name.ends_with("bias") {
        return vec![0.0; n];
    }
    if name.ends_with("layer_scale.scale") {
        return vec![0.01; n];
    }
    let fan_in: usize = shape[1..].iter().product::<usize>().max(1);
    let scale = if name.contains("codebook") { 1.0 } else { (3.0 / fan_in as f32).sqrt() };
    noise(seed, n).into_iter().map(|v| v * scale).collect()
}

#[test]
#[ignore = "builds a 200 MB random checkpoint; run in release for the timing"]
fn real_size_five_ten_and_sixty_seconds() {
    let path = shared().join("reference/manifests/Qwen3-TTS-12Hz-0.6B-Base.json");
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let cfg: SpeechTokenizerConfig =
        serde_json::from_value(manifest["speech_tokenizer_config"].clone()).expect("config parses");
    let tensors: Vec<(String, Vec<usize>, Vec<u8>)> = speech_tokenizer_tensors(&cfg)
        .into_iter()
        .filter(|t| t.name.starts_with("encoder."))
        .enumerate()
        .map(|(i, t)| {
            let data = fake_tensor(&t.name, &t.shape, i as u64 + 1);
            (t.name, t.shape, bytemuck::cast_slice(&data).to_vec())
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, s, d)| (n.clone(), TensorView::new(Dtype::F32, s.clone(), d).unwrap()))
        .collect();
    let file = std::env::temp_dir().join(format!("lyre-mimi-real-{}.safetensors", std::process::id()));
    safetensors::serialize_to_file(views, None, &file).unwrap();
    let weights = WeightFile::open(&file).unwrap();
    let enc = SpeechEncoder::from_parts(&cfg, &weights, &path).expect("real-size encoder loads");
    let _ = std::fs::remove_file(&file);

    let wav: Vec<f32> = noise(7, 60 * 24_000).into_iter().map(|v| v * 0.3).collect();
    enc.encode(&wav[..24_000]).unwrap();
    for seconds in [5, 10, 60] {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let codes = enc.encode(&wav[..seconds * 24_000]).unwrap();
        let (took, cpu) = (start.elapsed(), cpu.zip(cpu_seconds()).map(|(a, b)| b - a));
        assert_eq!(codes.len(), (seconds * 24_000).div_ceil(1920));
        eprintln!(
            "real-size speech encoder: {seconds} s clip in {took:?} on {} threads ({} s of CPU time)",
            rayon_threads(),
            cpu.map_or("?".into(), |c| format!("{c:.2}"))
        );
    }
}

/// User + system CPU time of this process so far (Linux `/proc/self/stat`, 100 Hz ticks), so
/// the timing means something on a busy machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

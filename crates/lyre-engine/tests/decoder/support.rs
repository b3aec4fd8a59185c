use std::path::{Path, PathBuf};
use std::sync::Arc;

use lyre_engine::checkpoint::config::{read_json, SpeechTokenizerConfig};
use lyre_engine::checkpoint::weights::WeightFile;
use lyre_engine::codec::{DecoderOptions, StandaloneDecoder};
use lyre_engine::gpu::{GpuContext, GpuOptions};
use safetensors::tensor::Dtype;
use safetensors::SafeTensors;

pub const FIXTURES: [&str; 2] = ["tiny-custom-voice", "tiny-base"];

pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

pub fn fixture(name: &str) -> PathBuf {
    let p = shared().join("fixtures").join(name);
    assert!(p.is_dir(), "fixture {} is missing", p.display());
    p
}

pub fn gpu() -> Arc<GpuContext> {
    Arc::new(GpuContext::new(&GpuOptions::from_env()).expect("a wgpu adapter (CI uses lavapipe)"))
}

/// The fixture's speech-tokenizer config and weights.
pub fn speech_tokenizer(name: &str) -> (SpeechTokenizerConfig, WeightFile) {
    let dir = fixture(name).join("speech_tokenizer");
    let cfg: SpeechTokenizerConfig = read_json(&dir.join("config.json")).expect("config");
    let weights = WeightFile::open(&dir.join("model.safetensors")).expect("weights");
    (cfg, weights)
}

pub fn decoder(ctx: &Arc<GpuContext>, name: &str, options: DecoderOptions) -> StandaloneDecoder {
    let (cfg, weights) = speech_tokenizer(name);
    StandaloneDecoder::with_options(ctx.clone(), &cfg, &weights, options).expect("decoder")
}

pub fn options(max_sessions: usize, max_frames: usize, frames_per_step: usize) -> DecoderOptions {
    DecoderOptions { max_sessions, max_frames, max_frames_per_step: frames_per_step }
}

/// One reference file of a fixture's `refs/`.
pub struct Refs {
    bytes: Vec<u8>,
}

impl Refs {
    pub fn open(fixture_name: &str, group: &str) -> Self {
        let path = fixture(fixture_name).join("refs").join(format!("{group}.safetensors"));
        Refs { bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) }
    }

    fn view(&self) -> SafeTensors<'_> {
        SafeTensors::deserialize(&self.bytes).expect("valid refs file")
    }

    pub fn has(&self, name: &str) -> bool {
        self.view().tensor(name).is_ok()
    }

    pub fn shape(&self, name: &str) -> Vec<usize> {
        self.view().tensor(name).unwrap().shape().to_vec()
    }

    pub fn f32(&self, name: &str) -> Vec<f32> {
        let st = self.view();
        let t = st.tensor(name).unwrap_or_else(|_| panic!("ref tensor {name}"));
        assert_eq!(t.dtype(), Dtype::F32, "{name}");
        bytemuck::pod_collect_to_vec(t.data())
    }

    pub fn i64(&self, name: &str) -> Vec<i64> {
        let st = self.view();
        let t = st.tensor(name).unwrap_or_else(|_| panic!("ref tensor {name}"));
        assert_eq!(t.dtype(), Dtype::I64, "{name}");
        bytemuck::pod_collect_to_vec(t.data())
    }

    /// A `(F, 16)` codes tensor as frames.
    pub fn frames(&self, name: &str) -> Vec<[u16; 16]> {
        self.i64(name).chunks_exact(16).map(|c| std::array::from_fn(|q| c[q] as u16)).collect()
    }

    /// A `(1, 16, F)` codes tensor (codebook-major) as frames.
    pub fn frames_codebook_major(&self, name: &str) -> Vec<[u16; 16]> {
        let v = self.i64(name);
        let f = v.len() / 16;
        (0..f).map(|t| std::array::from_fn(|q| v[q * f + t] as u16)).collect()
    }
}

pub fn e2e_cases(fixture_name: &str) -> Vec<String> {
    let path = fixture(fixture_name).join("refs/manifest.json");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    m.as_object().unwrap().keys().filter(|k| k.starts_with("e2e_")).cloned().collect()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Asserts max|Δ| ≤ `tol` and finite values; prints and returns max|Δ|.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) -> f32 {
    let d = max_abs_diff(got, want);
    let scale = want.iter().map(|a| a.abs()).fold(0.0, f32::max);
    println!("{what}: max|Δ| = {d:.3e} (scale {scale:.3}, tol {tol:.0e})");
    assert!(got.iter().all(|x| x.is_finite()), "{what}: non-finite output");
    assert!(d <= tol, "{what}: max|Δ| = {d:e} > {tol:e}");
    d
}

/// `[channel][time]` (PyTorch's `(1, C, T)`) → `[time][channel]`.
pub fn time_major(channel_major: &[f32], channels: usize) -> Vec<f32> {
    let t = channel_major.len() / channels;
    (0..t * channels).map(|i| channel_major[(i % channels) * t + i / channels]).collect()
}

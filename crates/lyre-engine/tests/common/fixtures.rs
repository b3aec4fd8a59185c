//! The fixtures of the parity tests (`../shared/fixtures`, made with the official `qwen-tts`
//! package), included by path into each test crate that reads them: where they are, their
//! reference tensors (`refs/*.safetensors`) and `refs/manifest.json`, and a GPU context.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lyre_engine::gpu::{GpuContext, GpuOptions};
use safetensors::tensor::Dtype;
use safetensors::SafeTensors;

/// The engine tuning of the tests: the defaults with the environment's `LYRE_ENGINE_TUNING_*`
/// variables applied, as the server applies them (CI's second pass forces the GPU kernels on
/// lavapipe this way).
pub fn tuning() -> lyre_engine::EngineTuning {
    lyre_engine::EngineTuning::default()
        .with_env(std::env::vars())
        .expect("valid LYRE_ENGINE_TUNING_* variables")
}

/// `../shared` beside the checkout, or `LYRE_SHARED`.
pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

pub fn fixture(name: &str) -> PathBuf {
    let p = shared().join("fixtures").join(name);
    assert!(p.is_dir(), "fixture {} is missing", p.display());
    p
}

/// A GPU context of its own, for the tests' [`tuning`] (fails without an adapter: CI has
/// lavapipe).
pub fn gpu() -> Arc<GpuContext> {
    let options = GpuOptions::from_tuning(&tuning());
    Arc::new(GpuContext::new(&options).expect("a wgpu adapter (CI uses lavapipe)"))
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

    pub fn u32(&self, name: &str) -> Vec<u32> {
        self.i64(name).into_iter().map(|v| v as u32).collect()
    }

    /// A `(F, 16)` codes tensor as frames.
    pub fn frames(&self, name: &str) -> Vec<[u16; 16]> {
        assert_eq!(self.shape(name).last(), Some(&16), "{name}");
        self.i64(name).chunks_exact(16).map(|c| std::array::from_fn(|q| c[q] as u16)).collect()
    }

    /// A `(1, 16, F)` codes tensor (codebook-major) as frames.
    pub fn frames_codebook_major(&self, name: &str) -> Vec<[u16; 16]> {
        let v = self.i64(name);
        let f = v.len() / 16;
        (0..f).map(|t| std::array::from_fn(|q| v[q * f + t] as u16)).collect()
    }
}

fn manifest(fixture_name: &str) -> serde_json::Value {
    let path = fixture(fixture_name).join("refs/manifest.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `meta` object of one refs group in `refs/manifest.json`.
pub fn meta(fixture_name: &str, group: &str) -> serde_json::Value {
    manifest(fixture_name)[group]["meta"].clone()
}

/// The greedy end-to-end cases of a fixture.
pub fn e2e_cases(fixture_name: &str) -> Vec<String> {
    manifest(fixture_name).as_object().unwrap().keys().filter(|k| k.starts_with("e2e_")).cloned().collect()
}

//! The official references for real inputs in `tests/data/official/` (made by
//! `scripts/oracle/make_input_refs.py` with the official `qwen-tts` package on the tiny
//! fixtures): `manifest.json` (texts and their ids, clips, greedy cases) and `refs.safetensors`
//! (reference codes, x-vectors, greedy codes, lossy decodes), and the clips themselves.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use safetensors::tensor::Dtype;
use safetensors::SafeTensors;

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/official")
}

pub fn manifest() -> &'static serde_json::Value {
    static MANIFEST: OnceLock<serde_json::Value> = OnceLock::new();
    MANIFEST.get_or_init(|| {
        let path = dir().join("manifest.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).expect("manifest.json parses")
    })
}

fn refs_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| std::fs::read(dir().join("refs.safetensors")).expect("refs.safetensors"))
}

fn tensor(name: &str) -> (Vec<usize>, Dtype, Vec<u8>) {
    let st = SafeTensors::deserialize(refs_bytes()).expect("valid refs.safetensors");
    let t = st.tensor(name).unwrap_or_else(|_| panic!("official ref tensor {name}"));
    (t.shape().to_vec(), t.dtype(), t.data().to_vec())
}

pub fn f32s(name: &str) -> Vec<f32> {
    let (_, dtype, data) = tensor(name);
    assert_eq!(dtype, Dtype::F32, "{name}");
    bytemuck::pod_collect_to_vec(&data)
}

/// A `(frames, 16)` i32 codes tensor.
pub fn codes(name: &str) -> Vec<[u16; 16]> {
    let (shape, dtype, data) = tensor(name);
    assert_eq!((dtype, shape.last()), (Dtype::I32, Some(&16)), "{name}");
    let v: Vec<i32> = bytemuck::pod_collect_to_vec(&data);
    v.chunks_exact(16).map(|c| std::array::from_fn(|q| c[q] as u16)).collect()
}

pub fn clip_bytes(file: &str) -> Vec<u8> {
    let path = dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The generator's checksum: Σ bits(xᵢ) · (2i + 1) · K mod 2⁶⁴, in hex. Any one differing
/// sample changes it (the weight is odd, a bit difference is below 2³²).
pub fn checksum(samples: &[f32]) -> String {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let sum = samples.iter().enumerate().fold(0u64, |acc, (i, x)| {
        let weight = (2 * i as u64 + 1).wrapping_mul(K);
        acc.wrapping_add(u64::from(x.to_bits()).wrapping_mul(weight))
    });
    format!("{sum:016x}")
}

pub fn ids(value: &serde_json::Value) -> Vec<u32> {
    value.as_array().expect("an id list").iter().map(|v| v.as_u64().unwrap() as u32).collect()
}

/// Fraction of codes equal, and the first frame that differs.
pub fn code_agreement(got: &[[u16; 16]], want: &[[u16; 16]]) -> (f64, Option<usize>) {
    assert_eq!(got.len(), want.len(), "frames");
    let equal: usize =
        got.iter().zip(want).map(|(g, w)| g.iter().zip(w).filter(|(a, b)| a == b).count()).sum();
    let first = got.iter().zip(want).position(|(g, w)| g != w);
    (equal as f64 / (16 * want.len().max(1)) as f64, first)
}

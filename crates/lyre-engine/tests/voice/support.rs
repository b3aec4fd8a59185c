use std::path::Path;

#[path = "../common/fixtures.rs"]
mod fixtures;
pub use fixtures::*;

pub fn data(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/make-audio-test-data.sh)", path.display()))
}

/// One f32 tensor of a fixture's `refs/{group}.safetensors`.
pub fn ref_f32(fixture_name: &str, group: &str, name: &str) -> Vec<f32> {
    Refs::open(fixture_name, group).f32(name)
}

pub fn max_abs(v: &[f32]) -> f32 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum();
    let na: f64 = a.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

pub fn fixture(name: &str) -> PathBuf {
    shared().join("fixtures").join(name)
}

pub fn lyre(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lyre")).args(args).output().expect("run lyre")
}

/// A fresh path under the system temp dir.
pub fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lyre-cli-{}-{name}", std::process::id()))
}

/// The `codes` tensor of a reference case, as rows of 16.
pub fn ref_codes(fixture_name: &str, case: &str) -> Vec<Vec<u64>> {
    let path = fixture(fixture_name).join("refs").join(format!("{case}.safetensors"));
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let v: Vec<i64> = bytemuck::pod_collect_to_vec(st.tensor("codes").unwrap().data());
    v.chunks(16).map(|c| c.iter().map(|&x| x as u64).collect()).collect()
}

pub fn read_codes(path: &Path) -> Vec<Vec<u64>> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect())
        .collect()
}

/// One f32 tensor of a reference case.
pub fn ref_f32(fixture_name: &str, case: &str, name: &str) -> Vec<f32> {
    let path = fixture(fixture_name).join("refs").join(format!("{case}.safetensors"));
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    bytemuck::pod_collect_to_vec(st.tensor(name).unwrap().data())
}

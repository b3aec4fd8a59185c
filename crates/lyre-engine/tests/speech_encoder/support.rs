use std::path::{Path, PathBuf};

use safetensors::tensor::Dtype;
use safetensors::SafeTensors;

pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

pub fn fixture(name: &str) -> PathBuf {
    let p = shared().join("fixtures").join(name);
    assert!(p.is_dir(), "fixture {} is missing", p.display());
    p
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

    /// A `(frames, 16)` int64 code tensor as rows.
    pub fn codes(&self, name: &str) -> Vec<[u16; 16]> {
        assert_eq!(self.shape(name)[1], 16, "{name}");
        let flat = self.i64(name);
        flat.chunks_exact(16).map(|c| std::array::from_fn(|i| c[i] as u16)).collect()
    }
}

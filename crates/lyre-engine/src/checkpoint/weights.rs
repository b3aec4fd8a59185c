//! Memory-mapped safetensors files with validated, named access to each tensor.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use safetensors::tensor::{Dtype, SafeTensors};

use crate::error::{EngineError, Result};

/// The element types Lyre reads from checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorDtype {
    Bf16,
    F32,
}

impl TensorDtype {
    pub fn name(self) -> &'static str {
        match self {
            TensorDtype::Bf16 => "BF16",
            TensorDtype::F32 => "F32",
        }
    }

    fn from_safetensors(d: Dtype) -> Option<Self> {
        match d {
            Dtype::BF16 => Some(TensorDtype::Bf16),
            Dtype::F32 => Some(TensorDtype::F32),
            _ => None,
        }
    }
}

/// What the config says one tensor must look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: TensorDtype,
}

impl ExpectedTensor {
    pub fn new(name: impl Into<String>, shape: &[usize], dtype: TensorDtype) -> Self {
        ExpectedTensor { name: name.into(), shape: shape.to_vec(), dtype }
    }
}

#[derive(Debug, Clone)]
struct TensorEntry {
    dtype: Dtype,
    shape: Vec<usize>,
    /// Absolute byte range inside the mapped file.
    start: usize,
    end: usize,
}

/// One mapped `.safetensors` file.
#[derive(Debug)]
pub struct WeightFile {
    path: PathBuf,
    map: Arc<Mmap>,
    tensors: HashMap<String, TensorEntry>,
}

/// One tensor's raw little-endian bytes, borrowed from the mapped file.
#[derive(Debug, Clone, Copy)]
pub struct TensorBytes<'a> {
    pub dtype: TensorDtype,
    pub shape: &'a [usize],
    pub data: &'a [u8],
}

impl TensorBytes<'_> {
    /// The tensor as f32 (bf16 widened exactly).
    pub fn to_f32(&self) -> Vec<f32> {
        match self.dtype {
            TensorDtype::F32 => {
                self.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            TensorDtype::Bf16 => self
                .data
                .chunks_exact(2)
                .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

impl WeightFile {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| EngineError::io(path, e))?;
        // SAFETY: the file is opened read-only and checkpoints are not modified while a server
        // runs; a concurrent truncation would be a deployment error we cannot guard against.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(|e| EngineError::io(path, e))?;
        let bad = |message: String| EngineError::Safetensors { path: path.to_path_buf(), message };
        let (header_len, metadata) = SafeTensors::read_metadata(&map).map_err(|e| bad(format!("{e:?}")))?;
        let data_start = 8 + header_len;
        let mut tensors = HashMap::new();
        for (name, info) in metadata.tensors() {
            let (s, e) = info.data_offsets;
            if data_start + e > map.len() {
                return Err(bad(format!("tensor `{name}` extends past the end of the file")));
            }
            tensors.insert(
                name,
                TensorEntry {
                    dtype: info.dtype,
                    shape: info.shape.clone(),
                    start: data_start + s,
                    end: data_start + e,
                },
            );
        }
        Ok(WeightFile { path: path.to_path_buf(), map: Arc::new(map), tensors })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Shape and dtype of one tensor, without checking them.
    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.tensors.get(name).map(|t| t.shape.as_slice())
    }

    /// The tensor's bytes, after checking its shape and dtype.
    pub fn get(&self, name: &str, shape: &[usize], dtype: TensorDtype) -> Result<TensorBytes<'_>> {
        let entry = self.tensors.get(name).ok_or_else(|| EngineError::MissingTensor {
            path: self.path.clone(),
            tensor: name.to_string(),
        })?;
        if entry.shape != shape {
            return Err(EngineError::TensorShape {
                path: self.path.clone(),
                tensor: name.to_string(),
                expected: shape.to_vec(),
                found: entry.shape.clone(),
            });
        }
        if TensorDtype::from_safetensors(entry.dtype) != Some(dtype) {
            return Err(EngineError::TensorDtype {
                path: self.path.clone(),
                tensor: name.to_string(),
                expected: dtype.name().to_string(),
                found: format!("{:?}", entry.dtype),
            });
        }
        Ok(TensorBytes { dtype, shape: &entry.shape, data: &self.map[entry.start..entry.end] })
    }

    /// Checks every expected tensor (name, shape, dtype) and that nothing unexpected is present.
    pub fn validate(&self, expected: &[ExpectedTensor], model_type: &str) -> Result<()> {
        for t in expected {
            self.get(&t.name, &t.shape, t.dtype)?;
        }
        let known: std::collections::HashSet<&str> = expected.iter().map(|t| t.name.as_str()).collect();
        let mut extra: Vec<&str> = self.names().filter(|n| !known.contains(n)).collect();
        extra.sort_unstable();
        if let Some(name) = extra.first() {
            return Err(EngineError::UnexpectedTensor {
                path: self.path.clone(),
                tensor: name.to_string(),
                model_type: model_type.to_string(),
            });
        }
        Ok(())
    }
}

//! Reading the encoder's f32 tensors out of `speech_tokenizer/model.safetensors`. Every error
//! names the file and the tensor (the `WeightFile` errors do).

use std::path::Path;

use super::conv::{CausalConv1d, ConvShape, PadMode};
use super::gemm::Linear;
use crate::checkpoint::weights::{TensorDtype, WeightFile};
use crate::error::{EngineError, Result};

/// Typed access to one weight file plus the config path that its shapes come from.
pub(super) struct Loader<'a> {
    pub(super) file: &'a WeightFile,
    pub(super) config_path: &'a Path,
}

impl Loader<'_> {
    /// One f32 tensor of exactly `shape`.
    pub(super) fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        Ok(self.file.get(name, shape, TensorDtype::F32)?.to_f32())
    }

    /// A config error about the speech tokenizer's `encoder_config`.
    pub(super) fn config_error(&self, field: &str, message: String) -> EngineError {
        EngineError::Config {
            path: self.config_path.to_path_buf(),
            field: format!("encoder_config.{field}"),
            message,
        }
    }

    /// `{prefix}.weight` `[out, in, kernel]` and, when `bias`, `{prefix}.bias` `[out]`.
    pub(super) fn conv(
        &self,
        prefix: &str,
        shape: ConvShape,
        pad: PadMode,
        bias: bool,
    ) -> Result<CausalConv1d> {
        if shape.kernel == 0 || shape.stride == 0 || shape.dilation == 0 {
            return Err(self.config_error("kernel_size", format!("`{prefix}` has a zero size")));
        }
        if shape.effective_kernel() < shape.stride {
            return Err(self.config_error(
                "kernel_size",
                format!("`{prefix}`: kernel {} is shorter than stride {}", shape.kernel, shape.stride),
            ));
        }
        let w = self.tensor(&format!("{prefix}.weight"), &[shape.out, shape.inp, shape.kernel])?;
        let b = if bias { Some(self.tensor(&format!("{prefix}.bias"), &[shape.out])?) } else { None };
        Ok(CausalConv1d::new(shape, pad, &w, b))
    }

    /// `{prefix}.weight` `[out, in]` (no bias: Mimi's attention and MLP have none).
    pub(super) fn linear(&self, prefix: &str, out: usize, inp: usize) -> Result<Linear> {
        let weight = self.tensor(&format!("{prefix}.weight"), &[out, inp])?;
        Ok(Linear::new(&weight, None, inp, out))
    }

    /// A 1×1 conv without bias `[out, in, 1]`, used as a linear layer.
    pub(super) fn pointwise(&self, prefix: &str, out: usize, inp: usize) -> Result<Linear> {
        let weight = self.tensor(&format!("{prefix}.weight"), &[out, inp, 1])?;
        Ok(Linear::new(&weight, None, inp, out))
    }
}

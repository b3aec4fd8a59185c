//! Element-wise kernels: gated activations (GLU, SwiGLU) and the clamp of the PCM output (the
//! codec's Snake runs in the conv epilogue).

mod clamp_pcm;
mod glu;
mod swiglu;

pub use clamp_pcm::ClampPcm;
pub use glu::Glu;
pub use swiglu::SwiGlu;

pub(super) const SOURCES: [crate::gpu::KernelSource; 3] = [clamp_pcm::SOURCE, glu::SOURCE, swiglu::SOURCE];

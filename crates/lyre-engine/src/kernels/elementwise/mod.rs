//! Element-wise kernels: gated activations (GLU, SwiGLU), Snake, and the clamp of the PCM output.

mod clamp_pcm;
mod glu;
mod snake;
mod swiglu;

pub use clamp_pcm::ClampPcm;
pub use glu::Glu;
pub use snake::{Snake, SnakeWeights};
pub use swiglu::SwiGlu;

pub(super) const SOURCES: [crate::gpu::KernelSource; 4] =
    [clamp_pcm::SOURCE, glu::SOURCE, snake::SOURCE, swiglu::SOURCE];

//! Every WGSL kernel against a plain CPU loop, on random shapes that are not multiples of the
//! workgroup sizes. These run on whatever adapter wgpu finds (lavapipe in CI) and fail when
//! there is none.

mod support;

mod attention;
mod attention_rope;
mod decode_layer;
mod fused;
mod gather;
mod linear;
mod sample;

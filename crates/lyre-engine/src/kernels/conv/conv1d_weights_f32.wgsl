// The packed weights as f32 (PackedConv::weight), for the direct kernel and the register-tile
// GEMM: w[(m * cin4 + c4) * cols + v] = four input channels.
@group(0) @binding(3) var<storage, read> w: array<WeightVec>;

alias WeightVec = vec4<f32>;

// dst row i = src row s(i), for i < the tick's session count, where s(i) is
// sessions[i].last_row (LAST_ROW mode: the talker row that ends session i's input this tick)
// or src_first + i * src_step (affine mode). Rows are `dim` f32 values.

struct Params {
    dim: u32,
    last_row_mode: u32,
    src_stride: u32,
    src_first: u32,
    src_step: u32,
    dst_stride: u32,
    dst_first: u32,
    dst_step: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sessions: array<Session>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x;
    let i = gid.y;
    if (d >= p.dim) {
        return;
    }
    var s = p.src_first + i * p.src_step;
    if (p.last_row_mode != 0u) {
        s = sessions[i].last_row;
    }
    dst[(p.dst_first + i * p.dst_step) * p.dst_stride + d] = src[s * p.src_stride + d];
}

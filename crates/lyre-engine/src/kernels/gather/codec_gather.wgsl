// For each session i: e = table[codes[i][code_col]] (a bf16 embedding row of `dim` values).
// Writes e to dst row (dst_first + i * dst_step) when WRITE_DST, and sets (ACC_SET) or adds
// to (ACC_ADD) the session's frame-embedding accumulator acc[slot], the sum of all 16 code
// embeddings that becomes the talker's next input.

struct Params {
    dim: u32,
    code_col: u32,
    write_dst: u32,
    acc_mode: u32,
    dst_stride: u32,
    dst_first: u32,
    dst_step: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sessions: array<Session>;
@group(0) @binding(2) var<storage, read> codes: array<u32>;
@group(0) @binding(3) var<storage, read> table: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;
@group(0) @binding(5) var<storage, read_write> acc: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x;
    let i = gid.y;
    if (d >= p.dim) {
        return;
    }
    let code = codes[i * 16u + p.code_col];
    let idx = code * p.dim + d;
    let w = table[idx / 2u];
    var e = bitcast<f32>(w & 0xffff0000u);
    if (idx % 2u == 0u) {
        e = bitcast<f32>(w << 16u);
    }
    if (p.write_dst != 0u) {
        dst[(p.dst_first + i * p.dst_step) * p.dst_stride + d] = e;
    }
    let a = sessions[i].slot * p.dim + d;
    if (p.acc_mode == 1u) {
        acc[a] = e;
    } else if (p.acc_mode == 2u) {
        acc[a] = acc[a] + e;
    }
}

// q/k-norm + RoPE, the KV-cache write and attention in one dispatch, for ticks where every row
// is the only row of its session (decode steps): qk_norm_rope_sg.wgsl followed by
// attention_sg.wgsl, with the same results. One workgroup of 256 threads per (q head, row);
// the work of one is attention_rope_head_sg.wgsl's `attend_head`.

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    qkv_stride: u32,
    out_stride: u32,
    has_norm: u32,
    eps: f32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
// Bindings 3 and 4 (q_norm, k_norm): qk_norm_weights.wgsl; 5-8 (RoPE tables, KV cache):
// attention_rope_head_sg.wgsl.
@group(0) @binding(9) var<storage, read_write> out: array<f32>;

fn load_qkv(i: u32) -> f32 {
    return qkv[i];
}

fn store_out(i: u32, v: f32) {
    out[i] = v;
}

fn store_state(dst: u32, m: f32, l: f32) {}

var<workgroup> wg_pos: u32;
var<workgroup> wg_slot: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let r = wid.y;
    if (t == 0u) {
        wg_pos = rows[r].pos;
        wg_slot = rows[r].slot;
    }
    let pos = workgroupUniformLoad(&wg_pos);
    let slot = workgroupUniformLoad(&wg_slot);
    attend_head(t, h, r * p.qkv_stride, slot, pos, 0u, pos, r * p.out_stride + h * p.head_dim);
}

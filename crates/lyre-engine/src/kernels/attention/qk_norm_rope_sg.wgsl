// qk_norm_rope.wgsl for GPUs with subgroups (same parameters, bindings and results): one subgroup
// per head, WG / SG heads per workgroup (grid x) and one row per grid y. Lane l holds dims
// l + SG·i (i < DPL), so the head's sum of squares is one subgroupAdd and each RoPE pair
// (d, d + head_dim / 2) sits in one lane: no workgroup memory and no barriers.
// Needs head_dim = SG · DPL with DPL even and at most 8.

override SG: u32 = 32u;
override DPL: u32 = 4u;

const WG: u32 = 256u;
// The private array of a lane's dims is indexed only inside loops of this constant length
// (unrolled), so it stays in registers.
const MAX_DPL: u32 = 8u;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x * (WG / SG) + t / SG;
    let lane = t % SG;
    if (h >= p.n_heads + 2u * p.n_kv_heads) {
        return;
    }
    let r = dispatch_row(wid);
    let hd = p.head_dim;
    let row = rows[r];
    let src = r * p.qkv_stride + h * hd + lane;
    let is_q = h < p.n_heads;
    if (h >= p.n_heads + p.n_kv_heads) {
        let dst = cache_base(row, h - p.n_heads - p.n_kv_heads) + lane;
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                v_cache[dst + i * SG] = kv_t(qkv[src + i * SG]);
            }
        }
        return;
    }
    var v: array<f32, 8>;
    var ss = 0.0;
    for (var i = 0u; i < MAX_DPL; i++) {
        if (i < DPL) {
            v[i] = qkv[src + i * SG];
            ss += v[i] * v[i];
        }
    }
    let total = subgroupAdd(ss);
    if (p.has_norm != 0u) {
        let inv = inverseSqrt(total / f32(hd) + p.eps);
        for (var i = 0u; i < MAX_DPL; i++) {
            if (i < DPL) {
                v[i] = norm_weight(is_q, lane + i * SG) * (v[i] * inv);
            }
        }
    }
    let dst = rotated_base(r, h, row);
    for (var i = 0u; i < MAX_DPL / 2u; i++) {
        if (i >= DPL / 2u) {
            break;
        }
        let d = lane + i * SG;
        store_rotated(is_q, dst, d, row.pos, v[i], v[i + DPL / 2u]);
    }
}

// One workgroup of 64 threads per head (grid x) and row (grid y).

const WG: u32 = 64u;
const MAX_HD: u32 = 256u;
var<workgroup> head: array<f32, MAX_HD>;
var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let r = dispatch_row(wid);
    let hd = p.head_dim;
    let row = rows[r];
    let src = r * p.qkv_stride + h * hd;
    let is_q = h < p.n_heads;
    let is_v = h >= p.n_heads + p.n_kv_heads;
    if (is_v) {
        let dst = cache_base(row, h - p.n_heads - p.n_kv_heads);
        for (var d = t; d < hd; d += WG) {
            v_cache[dst + d] = kv_t(qkv[src + d]);
        }
        return;
    }
    var ss = 0.0;
    for (var d = t; d < hd; d += WG) {
        let v = qkv[src + d];
        head[d] = v;
        ss += v * v;
    }
    partial[t] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        workgroupBarrier();
    }
    if (p.has_norm != 0u) {
        let inv = inverseSqrt(partial[0] / f32(hd) + p.eps);
        for (var d = t; d < hd; d += WG) {
            head[d] = norm_weight(is_q, d) * (head[d] * inv);
        }
    }
    workgroupBarrier();
    let half = hd / 2u;
    let dst = rotated_base(r, h, row);
    for (var d = t; d < half; d += WG) {
        store_rotated(is_q, dst, d, row.pos, head[d], head[d + half]);
    }
}

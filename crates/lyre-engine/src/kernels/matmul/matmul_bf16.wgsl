// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for the tick's rows (INPUT: see matmul_common).
// w: bf16, row-major [n][k] (PyTorch Linear layout), packed two per u32, read four at a time.
// One thread per output column, TILE_R rows per workgroup so each weight is read once per tile.

const TILE_R: u32 = 4u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let n = gid.x;
    let rows = counts[p.rows_index];
    let r0 = wid.y * TILE_R;
    if (n >= p.n || r0 >= rows) {
        return;
    }
    let nr = min(TILE_R, rows - r0);
    let k4 = p.k / 4u;
    var base: array<u32, TILE_R>;
    for (var r = 0u; r < TILE_R; r++) {
        base[r] = (p.x_offset + (r0 + min(r, nr - 1u)) * p.x_row_step * p.x_stride) / 4u;
    }
    var acc = array<f32, TILE_R>(0.0, 0.0, 0.0, 0.0);
    var ss = array<f32, TILE_R>(0.0, 0.0, 0.0, 0.0);
    let wrow = n * k4;
    for (var i = 0u; i < k4; i++) {
        let wf = w_in(wrow, i);
        for (var r = 0u; r < TILE_R; r++) {
            let xv = x_in(base[r], i);
            acc[r] += dot(wf, xv);
            ss[r] += sq(xv);
        }
    }
    for (var r = 0u; r < nr; r++) {
        var v = acc[r] * row_scale(ss[r]);
        if (p.has_bias != 0u) {
            v += bias_at(n);
        }
        if (p.activation == 1u) {
            v = v / (1.0 + exp(min(-v, 80.0)));
        }
        let yi = p.y_offset + (r0 + r) * p.y_stride + n;
        if (p.accumulate != 0u) {
            v += y[yi];
        }
        y[yi] = v;
    }
}

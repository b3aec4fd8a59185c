// The second half of a split-K matmul_bf16_gemm: y[r, n] (+)= act(bias[n] + scale(r) *
// sum_z part[z, r, n]), the SPLIT partials added in order (so the result does not depend on
// which workgroup finished first). Grid: (ceil(n / 256), rows); one workgroup per row and 256
// columns. In the RMS-normed mode the workgroup first reduces the row's sum of squares.

override SPLIT: u32 = 2u;

@group(0) @binding(7) var<storage, read_write> part: array<f32>;

var<workgroup> wg_rows: u32;
var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let row = wid.y;
    if (row >= rows) {
        return;
    }
    var scale = 1.0;
    if (INPUT == INPUT_RMS) {
        let base = row_base(row);
        var s = 0.0;
        for (var i = t; i < p.k / 4u; i += 256u) {
            s += sq(x[base + i]);
        }
        red[t] = s;
        for (var half = 128u; half > 0u; half /= 2u) {
            workgroupBarrier();
            if (t < half) {
                red[t] += red[t + half];
            }
        }
        workgroupBarrier();
        scale = row_scale(red[0]);
    }
    let n = wid.x * 256u + t;
    if (n >= p.n) {
        return;
    }
    var v = 0.0;
    for (var z = 0u; z < SPLIT; z++) {
        v += part[(z * rows + row) * p.n + n];
    }
    finish(v * scale, n, row);
}

// y[r, n] (+)= act(bias[n] + sum_k in(x)[r, k] * w[n, k]) for many rows (prefill, large batches):
// a 32-row × 64-column output tile per workgroup, K in steps of 32 staged in workgroup memory,
// so each weight is read once per 32 rows instead of once per row. Each of the 256 threads
// accumulates 2 rows × 4 columns. K must be a multiple of 32.
// INPUT (matmul_common.wgsl): the x loaders apply gamma or the SwiGLU gate as they stage x, and
// in the RMS-normed mode each sums the squares of its raw x values; the 8 loaders of a row
// reduce them through workgroup memory after the k loop.

const TM: u32 = 32u;
const TN: u32 = 64u;
const TK: u32 = 32u;

var<workgroup> xs: array<f32, 1024>; // [row][k], TM × TK
var<workgroup> ws: array<f32, 2048>; // [k][col], TK × TN
var<workgroup> wg_rows: u32;
var<workgroup> sums: array<f32, 256>; // per loader thread: sum of x^2 over its k slots

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t == 0u) {
        wg_rows = counts[p.rows_index];
    }
    let rows = workgroupUniformLoad(&wg_rows);
    let n0 = wid.x * TN;
    let r0 = wid.y * TM;
    let k4 = p.k / 4u;
    let tx = t % 16u; // columns tx*4 .. tx*4+3
    let ty = t / 16u; // rows ty*2, ty*2+1
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    // Loader roles: thread t stages x row t/8 (4 k values), and w entries t and t+256.
    let xrow = r0 + t / 8u;
    let xq = (t % 8u) * 4u;
    let xbase = (p.x_offset + min(xrow, rows - 1u) * p.x_row_step * p.x_stride) / 4u;
    var ss = 0.0;
    for (var k0 = 0u; k0 < p.k; k0 += TK) {
        var xv = vec4<f32>(0.0);
        if (xrow < rows) {
            let i = (k0 + xq) / 4u;
            let raw = x_in(xbase, i);
            ss += sq(raw);
            xv = raw * gamma4(i);
        }
        let xi = (t / 8u) * TK + xq;
        xs[xi] = xv.x;
        xs[xi + 1u] = xv.y;
        xs[xi + 2u] = xv.z;
        xs[xi + 3u] = xv.w;
        for (var j = 0u; j < 2u; j++) {
            let idx = t + j * 256u;
            let col = idx / 8u;
            let kq = (idx % 8u) * 4u;
            var wv = vec4<f32>(0.0);
            if (n0 + col < p.n) {
                wv = bf16x4(w[(n0 + col) * k4 + (k0 + kq) / 4u]);
            }
            ws[kq * TN + col] = wv.x;
            ws[(kq + 1u) * TN + col] = wv.y;
            ws[(kq + 2u) * TN + col] = wv.z;
            ws[(kq + 3u) * TN + col] = wv.w;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            let a = xs[(ty * 2u) * TK + kk];
            let b = xs[(ty * 2u + 1u) * TK + kk];
            let c = kk * TN + tx * 4u;
            let wv = vec4<f32>(ws[c], ws[c + 1u], ws[c + 2u], ws[c + 3u]);
            acc0 += a * wv;
            acc1 += b * wv;
        }
        workgroupBarrier();
    }
    if (INPUT == INPUT_RMS) {
        sums[t] = ss;
        workgroupBarrier();
    }
    for (var rr = 0u; rr < 2u; rr++) {
        let row = r0 + ty * 2u + rr;
        if (row >= rows) {
            continue;
        }
        var accv = acc0;
        if (rr == 1u) {
            accv = acc1;
        }
        if (INPUT == INPUT_RMS) {
            // Row ty*2+rr of the tile was staged by loader threads (ty*2+rr)*8 .. +7.
            let l0 = (ty * 2u + rr) * 8u;
            var q = 0.0;
            for (var j = 0u; j < 8u; j++) {
                q += sums[l0 + j];
            }
            accv *= row_scale(q);
        }
        for (var cc = 0u; cc < 4u; cc++) {
            let n = n0 + tx * 4u + cc;
            if (n >= p.n) {
                continue;
            }
            var v = accv[cc];
            if (p.has_bias != 0u) {
                v += bias_at(n);
            }
            if (p.activation == 1u) {
                v = v / (1.0 + exp(min(-v, 80.0)));
            }
            let yi = p.y_offset + row * p.y_stride + n;
            if (p.accumulate != 0u) {
                v += y[yi];
            }
            y[yi] = v;
        }
    }
}

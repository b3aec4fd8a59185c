// Causal conv1d / transposed conv1d / linear over sequence views, with an epilogue:
//   y[s, t*up + phase, o] (+)= scale[o] * act(bias[o] + sum_m sum_c w[m, c, v] * x[s, t - m*dil, c])
//                              (+ res[s, t*up + phase, o])
// where v = phase * cout + o is a "virtual column": a transposed conv with stride `up` is a conv
// whose `up` output phases are extra columns. Tap m reads input row t - m*dil, so a view with
// history (a ring) makes the conv causal and streaming. Weights are packed on the CPU as
// w[(m * cin4 + c4) * cols + v] = 4 input channels, so threads of neighbouring columns read
// neighbouring weights. Each thread computes R rows of one column; `out_threads` columns share
// 64 lanes (fewer than 64 only for narrow outputs). With KS > 1 the workgroup is KS × 64 threads
// that split the input channels of every tap into KS slices and add their partial sums, so
// layers with few output tiles but long reductions still fill the GPU.

struct Params {
    x: View,
    y: View,
    r: View,
    cin4: u32,
    cols: u32,
    cout: u32,
    taps: u32,
    dil: u32,
    up: u32,
    rows_in: u32,
    y_rows: u32,
    flags: u32,
    out_threads: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> scale: array<f32>;
@group(0) @binding(6) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> res: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;

override KS: u32 = 1u;

const WG: u32 = 64u;
const R: u32 = 4u;
const HAS_BIAS: u32 = 1u;
const HAS_SCALE: u32 = 2u;
const ACCUMULATE: u32 = 4u;
const RESIDUAL: u32 = 8u;
const ACT_SHIFT: u32 = 4u;
const ACT_GELU: u32 = 1u;
const ACT_SILU: u32 = 2u;

// erf via the Numerical Recipes erfc (fractional error < 1.2e-7 everywhere); WGSL has no erf.
fn erf_f32(v: f32) -> f32 {
    let z = abs(v);
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let erfc = t * exp(-z * z + poly);
    return select(erfc - 1.0, 1.0 - erfc, v >= 0.0);
}

fn activate(v: f32, act: u32) -> f32 {
    if (act == ACT_GELU) {
        return 0.5 * v * (1.0 + erf_f32(v * 0.70710678118654752));
    }
    if (act == ACT_SILU) {
        return v / (1.0 + exp(min(-v, 80.0)));
    }
    return v;
}

var<workgroup> partial: array<vec4<f32>, 512>; // WG * KS, KS <= 8

@compute @workgroup_size(64 * KS)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let lane = li % WG;
    let slice = li / WG;
    let ot = p.out_threads;
    let v = wid.x * ot + lane % ot;
    let first = wid.z * (WG / ot) * R + (lane / ot) * R;
    let ns = n_sessions();
    // This thread's rows: a prefix of R candidates is valid; the rest repeat the last valid one.
    var sess: array<u32, R>;
    var trow: array<u32, R>;
    var n_valid = 0u;
    for (var j = 0u; j < R; j++) {
        let local = first + j;
        let flat = wid.y * p.y_rows + local;
        let s = flat / p.rows_in;
        if (local < p.y_rows && s < ns) {
            sess[j] = s;
            trow[j] = flat % p.rows_in;
            n_valid = j + 1u;
        } else if (j > 0u) {
            sess[j] = sess[j - 1u];
            trow[j] = trow[j - 1u];
        }
    }
    // Threads without a valid column or row still run the loop (on column 0 / row 0 of session
    // 0) so that every thread reaches the barrier; they write nothing.
    let vc = select(0u, v, v < p.cols);
    let per_slice = (p.cin4 + KS - 1u) / KS;
    let c_begin = min(slice * per_slice, p.cin4);
    let c_end = min(c_begin + per_slice, p.cin4);
    var acc = vec4<f32>(0.0);
    for (var m = 0u; m < p.taps; m++) {
        var xb: array<u32, R>;
        for (var j = 0u; j < R; j++) {
            xb[j] = row_offset(p.x, sess[j], i32(trow[j]) - i32(m * p.dil)) / 4u;
        }
        var wi = (m * p.cin4 + c_begin) * p.cols + vc;
        for (var c = c_begin; c < c_end; c++) {
            let w4 = w[wi];
            wi += p.cols;
            acc += vec4<f32>(dot(w4, x[xb[0] + c]), dot(w4, x[xb[1] + c]), dot(w4, x[xb[2] + c]), dot(w4, x[xb[3] + c]));
        }
    }
    if (KS > 1u) {
        partial[li] = acc;
        workgroupBarrier();
        if (slice != 0u) {
            return;
        }
        for (var k = 1u; k < KS; k++) {
            acc += partial[k * WG + lane];
        }
    }
    if (v >= p.cols || n_valid == 0u) {
        return;
    }
    write_column(v, acc, n_valid, sess, trow);
}

fn write_column(v: u32, acc: vec4<f32>, n_valid: u32, sess: array<u32, R>, trow: array<u32, R>) {
    let phase = v / p.cout;
    let o = v % p.cout;
    let act = p.flags >> ACT_SHIFT;
    for (var j = 0u; j < n_valid; j++) {
        var val = acc[j];
        if ((p.flags & HAS_BIAS) != 0u) {
            val += bias[o];
        }
        val = activate(val, act);
        if ((p.flags & HAS_SCALE) != 0u) {
            val *= scale[o];
        }
        let t_out = i32(trow[j] * p.up + phase);
        if ((p.flags & RESIDUAL) != 0u) {
            val += res[row_offset(p.r, sess[j], t_out) + o];
        }
        let yi = row_offset(p.y, sess[j], t_out) + o;
        if ((p.flags & ACCUMULATE) != 0u) {
            val += y[yi];
        }
        y[yi] = val;
    }
}

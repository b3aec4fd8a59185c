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

override KS: u32 = 1u;

const WG: u32 = 64u;
const R: u32 = 4u;

var<workgroup> partial: array<vec4<f32>, WG * KS>;

@compute @workgroup_size(WG * KS)
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
    for (var j = 0u; j < n_valid; j++) {
        store_output(sess[j], trow[j], v, acc[j]);
    }
}

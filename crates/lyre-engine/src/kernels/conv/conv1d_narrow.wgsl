// conv1d.wgsl's layer for outputs of at most MAX_COLS virtual columns (the decoder's last conv,
// to one audio channel). There a thread per column walks all of K alone for its rows, with
// neighbouring threads reading rows far apart, and a tick of many rows leaves the GPU waiting on
// those loads. Here LANES threads share each row: for every tap they read neighbouring channel
// groups of its input row, then add their sums in workgroup memory. A workgroup covers ROWS
// rows (grid z) of one session, or of several whole sessions (`y_rows`, grid y), as the direct
// kernel's tiling does.

const LANES: u32 = 8u;
const ROWS: u32 = 32u;
const MAX_COLS: u32 = 4u;

var<workgroup> partial: array<vec4<f32>, 256>; // LANES × ROWS sums, column v in component v

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let lane = li % LANES;
    let local = wid.z * ROWS + li / LANES;
    let flat = wid.y * p.y_rows + local;
    let valid = local < p.y_rows && flat / p.rows_in < n_sessions();
    // A thread past the step's rows runs on session 0's first row, so that it reaches the
    // barrier; it writes nothing.
    let s = select(0u, flat / p.rows_in, valid);
    let t = select(0u, flat % p.rows_in, valid);
    var acc = vec4<f32>(0.0);
    for (var m = 0u; m < p.taps; m++) {
        let xb = row_offset(p.x, s, i32(t) - i32(m * p.dil)) / 4u;
        for (var c = lane; c < p.cin4; c += LANES) {
            let xv = x[xb + c];
            let wb = (m * p.cin4 + c) * p.cols;
            acc.x += dot(w[wb], xv);
            if (p.cols > 1u) {
                acc.y += dot(w[wb + 1u], xv);
            }
            if (p.cols > 2u) {
                acc.z += dot(w[wb + 2u], xv);
            }
            if (p.cols > 3u) {
                acc.w += dot(w[wb + 3u], xv);
            }
        }
    }
    partial[li] = acc;
    workgroupBarrier();
    if (lane != 0u || !valid) {
        return;
    }
    for (var k = 1u; k < LANES; k++) {
        acc += partial[li + k];
    }
    for (var v = 0u; v < min(p.cols, MAX_COLS); v++) {
        store_output(s, t, v, acc[v]);
    }
}

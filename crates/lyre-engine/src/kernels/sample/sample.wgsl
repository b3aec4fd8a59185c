// The portable sampler (adapters without fixed-size subgroups): shared-memory tree reductions and
// 32-step binary searches for the top-k and top-p thresholds. sample_sg.wgsl gives the same codes
// with subgroup reductions and far fewer barriers.

var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;

fn sum_f(t: u32, v: f32) -> f32 {
    red_f[t] = v;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            red_f[t] += red_f[t + st];
        }
        workgroupBarrier();
    }
    let r = red_f[0];
    workgroupBarrier();
    return r;
}

fn sum_u(t: u32, v: u32) -> u32 {
    red_u[t] = v;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            red_u[t] += red_u[t + st];
        }
        workgroupBarrier();
    }
    let r = red_u[0];
    workgroupBarrier();
    return r;
}

// Index of the largest value; the smallest index wins ties (as torch.argmax).
fn argmax(t: u32, vocab: u32) -> u32 {
    var best_v = -3.0e38;
    var best_i = 0xffffffffu;
    for (var j = 0u; j < PER; j++) {
        let i = t * PER + j;
        if (i < vocab && s[i] > best_v) {
            best_v = s[i];
            best_i = i;
        }
    }
    red_f[t] = best_v;
    red_u[t] = best_i;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            let ov = red_f[t + st];
            let oi = red_u[t + st];
            if (ov > red_f[t] || (ov == red_f[t] && oi < red_u[t])) {
                red_f[t] = ov;
                red_u[t] = oi;
            }
        }
        workgroupBarrier();
    }
    let r = red_u[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x;
    let sess = sessions[i];
    let vocab = p.vocab;
    let talker = p.talker_mode != 0u;
    let row = (p.logits_first + i * p.logits_step) * p.logits_stride;
    let hist = sess.slot * p.history_words;

    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c >= vocab) {
            break;
        }
        s[c] = processed_logit(c, row, hist, sess, talker);
    }
    workgroupBarrier();

    let st = settings(t, talker, sess);
    let sample = st.sample != 0u;
    let temperature = st.temperature;
    let top_k = st.top_k;
    let top_p = st.top_p;
    var code = 0u;
    if (sample) {
        code = draw(t, vocab, temperature, top_k, top_p, sess);
    } else {
        code = argmax(t, vocab);
    }

    if (t == 0u) {
        code = chosen(i, code);
        codes[i * 16u + p.code_col] = code;
        if (talker && code < vocab) {
            history[hist + code / 32u] |= 1u << (code % 32u);
        }
    }
}

fn draw(t: u32, vocab: u32, temperature: f32, top_k_in: u32, top_p: f32, sess: Session) -> u32 {
    let inv_t = 1.0 / temperature;
    // Temperature; masked entries stay far below every real one.
    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c < vocab && s[c] > NEG) {
            s[c] = s[c] * inv_t;
        }
    }
    workgroupBarrier();

    // Top-k: the largest threshold key kept by at least k entries.
    var kth = 0u;
    let top_k = min(top_k_in, vocab);
    if (top_k > 0u && top_k < vocab) {
        var lo = 0u;
        var hi = 0xffffffffu;
        for (var it = 0u; it < 32u; it++) {
            let mid = lo + (hi - lo) / 2u + (hi - lo) % 2u;
            var n = 0u;
            for (var j = 0u; j < PER; j++) {
                let c = t * PER + j;
                if (c < vocab && key(s[c]) >= mid) {
                    n += 1u;
                }
            }
            if (sum_u(t, n) >= top_k) {
                lo = mid;
            } else {
                hi = mid - 1u;
            }
        }
        kth = lo;
    }

    // Softmax numerators of the kept entries (masked and cut entries get 0).
    var m = -3.0e38;
    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c < vocab && s[c] > NEG && key(s[c]) >= kth) {
            m = max(m, s[c]);
        }
    }
    red_f[t] = m;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            red_f[t] = max(red_f[t], red_f[t + st]);
        }
        workgroupBarrier();
    }
    let vmax = red_f[0];
    workgroupBarrier();
    var local = 0.0;
    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c < vocab) {
            var e = 0.0;
            if (s[c] > NEG && key(s[c]) >= kth) {
                e = exp(s[c] - vmax);
            }
            s[c] = e;
            local += e;
        }
    }
    var total = sum_f(t, local);

    // Top-p: drop the largest set of smallest entries whose mass is <= (1 - top_p), i.e. every
    // entry whose bits are below `lo`, the largest cut with mass(bits < cut) <= budget.
    if (top_p < 1.0) {
        let budget = (1.0 - top_p) * total;
        var lo = 0u;
        var hi = bitcast<u32>(1.0) + 1u;
        for (var it = 0u; it < 32u; it++) {
            let mid = lo + (hi - lo) / 2u;
            var mass = 0.0;
            for (var j = 0u; j < PER; j++) {
                let c = t * PER + j;
                if (c < vocab && s[c] > 0.0 && bitcast<u32>(s[c]) < mid) {
                    mass += s[c];
                }
            }
            let fits = sum_f(t, mass) <= budget;
            if (hi - lo > 1u) {
                if (fits) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        var kept = 0.0;
        for (var j = 0u; j < PER; j++) {
            let c = t * PER + j;
            if (c < vocab && s[c] > 0.0 && bitcast<u32>(s[c]) < lo) {
                s[c] = 0.0;
            }
            if (c < vocab) {
                kept += s[c];
            }
        }
        total = sum_f(t, kept);
    }

    // Inverse CDF over index order: each thread owns a contiguous chunk.
    let goal = draw_goal(sess, total);
    var chunk = 0.0;
    var last_kept = 0u;
    var has_kept = 0u;
    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c < vocab) {
            chunk += s[c];
            if (s[c] > 0.0) {
                last_kept = c;
                has_kept = 1u;
            }
        }
    }
    red_f[t] = chunk;
    workgroupBarrier();
    // Inclusive Hillis-Steele scan of the chunk sums.
    for (var off = 1u; off < WG; off <<= 1u) {
        var add = 0.0;
        if (t >= off) {
            add = red_f[t - off];
        }
        workgroupBarrier();
        red_f[t] += add;
        workgroupBarrier();
    }
    let end = red_f[t];
    let start = end - chunk;
    // Fallback (rounding pushed the goal past the total): the last kept entry.
    red_u[t] = select(0u, last_kept + 1u, has_kept != 0u);
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            red_u[t] = max(red_u[t], red_u[t + st]);
        }
        workgroupBarrier();
    }
    var choice = red_u[0] - 1u;
    workgroupBarrier();
    red_u[t] = 0xffffffffu;
    if (goal >= start && goal < end) {
        var acc = start;
        for (var j = 0u; j < PER; j++) {
            let c = t * PER + j;
            if (c < vocab && s[c] > 0.0) {
                acc += s[c];
                if (goal < acc) {
                    red_u[t] = c;
                    break;
                }
            }
        }
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (t < st) {
            red_u[t] = min(red_u[t], red_u[t + st]);
        }
        workgroupBarrier();
    }
    if (red_u[0] != 0xffffffffu) {
        choice = red_u[0];
    }
    workgroupBarrier();
    return choice;
}

// Chooses one code per session from a row of logits, with the official processors and order:
//   talker (TALKER mode): repetition penalty over the session's earlier first-codebook codes,
//     EOS masked for the first `min_new_tokens` frames (always with FLAG_IGNORE_EOS), ids [suppress_start, vocab) except EOS
//     suppressed;
//   then greedy argmax (first index on ties), or temperature → top-k → top-p → a draw from a
//   counter-based RNG keyed by (seed, frame, code column), so a session's draws do not depend on
//   which other sessions share the tick.
// One 256-thread workgroup per session; the row lives in workgroup memory.

struct Params {
    vocab: u32,
    logits_stride: u32,
    logits_first: u32,
    logits_step: u32,
    code_col: u32,
    talker_mode: u32,
    eos: u32,
    suppress_start: u32,
    min_new_tokens: u32,
    history_words: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sessions: array<Session>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read_write> codes: array<u32>;
@group(0) @binding(4) var<storage, read_write> history: array<u32>;

const WG: u32 = 256u;
const MAX_V: u32 = 4096u;
const PER: u32 = 16u; // MAX_V / WG: thread t owns elements [t * PER, t * PER + PER)
const NEG: f32 = -1.0e30;
const FLAG_TALKER_SAMPLE: u32 = 1u;
const FLAG_CP_SAMPLE: u32 = 2u;
const FLAG_IGNORE_EOS: u32 = 4u;

var<workgroup> s: array<f32, MAX_V>;
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> u_sample: u32;
var<workgroup> u_temperature: f32;
var<workgroup> u_top_k: u32;
var<workgroup> u_top_p: f32;

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Float → u32 with the same order (for the threshold searches).
fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

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
        var v = logits[row + c];
        if (talker) {
            let seen = (history[hist + c / 32u] >> (c % 32u)) & 1u;
            if (seen != 0u && sess.rep_penalty != 1.0) {
                if (v < 0.0) {
                    v = v * sess.rep_penalty;
                } else {
                    v = v / sess.rep_penalty;
                }
            }
            let eos_masked = sess.gen_index < p.min_new_tokens || (sess.flags & FLAG_IGNORE_EOS) != 0u;
            if (c == p.eos && eos_masked) {
                v = NEG;
            }
            if (c >= p.suppress_start && c != p.eos) {
                v = NEG;
            }
        }
        s[c] = v;
    }
    workgroupBarrier();

    // Sampling settings come from a storage read; pass them through workgroup memory so the
    // branches below, which contain barriers, are uniform.
    if (t == 0u) {
        if (talker) {
            u_sample = sess.flags & FLAG_TALKER_SAMPLE;
            u_temperature = sess.temperature;
            u_top_k = sess.top_k;
            u_top_p = sess.top_p;
        } else {
            u_sample = sess.flags & FLAG_CP_SAMPLE;
            u_temperature = sess.sub_temperature;
            u_top_k = sess.sub_top_k;
            u_top_p = sess.sub_top_p;
        }
    }
    let sample = workgroupUniformLoad(&u_sample) != 0u;
    let temperature = workgroupUniformLoad(&u_temperature);
    let top_k = workgroupUniformLoad(&u_top_k);
    let top_p = workgroupUniformLoad(&u_top_p);
    var code = 0u;
    if (sample) {
        code = draw(t, vocab, temperature, top_k, top_p, sess);
    } else {
        code = argmax(t, vocab);
    }

    if (t == 0u) {
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
    let r = pcg(sess.seed_lo ^ pcg(sess.seed_hi ^ pcg(sess.gen_index ^ pcg(p.code_col + 0x9e3779b9u))));
    let goal = f32(r >> 8u) * (1.0 / 16777216.0) * total;
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

// The subgroup sampler: the same codes as sample.wgsl, bit for bit, with about a dozen barriers
// instead of several hundred. SG must equal the adapter's (fixed) subgroup size, a power of two
// in [4, 128].
//
// What must match the portable kernel exactly, and how:
//   - Counts, maxima and minima are order-free: subgroup reductions plus one cross-subgroup step.
//   - The top-k threshold (the k-th largest key) is found by a radix select, 4 passes of 8 bits
//     over a 256-bin histogram, instead of a 32-step binary search: the same key.
//   - Float sums must round as the portable kernel's tree (level st adds element t + st to t,
//     st = 128 … 1, over per-thread sequential chunk sums). Virtual thread vt owns chunk
//     reverseBits8(vt), so the first levels (the high chunk bits) are a subgroupShuffleXor
//     butterfly and the last ones a small tree over the per-subgroup partials.
//   - The top-p cut is the largest cut with mass(bits < cut) <= budget; mass is monotone in the
//     cut, so testing 15 cuts per round (8 rounds) finds the same cut as the binary search.
//   - The draw's inclusive Hillis-Steele scan is replayed exactly: lanes carry their own chunk
//     sum and the previous subgroup's for the levels below SG, then the levels from SG up are a
//     scan over subgroups, lane by lane, through workgroup memory.

override SG: u32 = 32u;

const MAXU: u32 = 0xffffffffu;
const MAX_NSG: u32 = 64u; // WG / smallest SG
const SLOT: u32 = 256u; // vec4 partials per slot: 4 per subgroup-partial group, MAX_NSG groups

var<workgroup> part: array<vec4<f32>, 512>; // two slots, used alternately
var<workgroup> part_u: array<vec2<u32>, 128>; // two slots of MAX_NSG
var<workgroup> scan_buf: array<f32, WG>;
var<workgroup> hist: array<atomic<u32>, 768>; // three 256-bin histograms, used in turn

// The portable kernel's tree over 256 partials, for up to four sums at once. Thread vt must hold
// the partial of chunk reverseBits8(vt). Slots alternate between consecutive calls.
fn tree_sum4(x: vec4<f32>, q: u32, lane: u32, g: u32, slot: u32) -> vec4<f32> {
    var v = x;
    for (var m = 1u; m < SG; m <<= 1u) {
        v = v + subgroupShuffleXor(v, m);
    }
    if (lane == 0u) {
        part[slot * SLOT + q * MAX_NSG + g] = v;
    }
    return v;
}

// The cross-subgroup levels of the tree (after a barrier that follows tree_sum4).
fn tree_cross(q: u32, lane: u32, slot: u32) -> vec4<f32> {
    let nsg = WG / SG;
    let nl = min(nsg, SG);
    let per = nsg / nl;
    let base = slot * SLOT + q * MAX_NSG + (lane % nl) * per;
    var a: array<vec4<f32>, 16>;
    for (var r = 0u; r < per; r++) {
        a[r] = part[base + r];
    }
    for (var w = per; w > 1u; w >>= 1u) {
        for (var i = 0u; i < w / 2u; i++) {
            a[i] = a[2u * i] + a[2u * i + 1u];
        }
    }
    var v = a[0];
    for (var m = 1u; m < nl; m <<= 1u) {
        v = v + subgroupShuffleXor(v, m);
    }
    return v;
}

fn tree_sum(x: f32, lane: u32, g: u32, slot: u32) -> f32 {
    _ = tree_sum4(vec4<f32>(x, 0.0, 0.0, 0.0), 0u, lane, g, slot);
    workgroupBarrier();
    return tree_cross(0u, lane, slot).x;
}

// (max of a, min of b) over the workgroup.
fn max_min(a: u32, b: u32, lane: u32, g: u32, slot: u32) -> vec2<u32> {
    let x = vec2<u32>(subgroupMax(a), subgroupMin(b));
    if (lane == 0u) {
        part_u[slot * MAX_NSG + g] = x;
    }
    workgroupBarrier();
    var mx = 0u;
    var mn = MAXU;
    for (var i = lane; i < WG / SG; i += SG) {
        mx = max(mx, part_u[slot * MAX_NSG + i].x);
        mn = min(mn, part_u[slot * MAX_NSG + i].y);
    }
    return vec2<u32>(subgroupMax(mx), subgroupMin(mn));
}

// Key → float (the inverse of `key`).
fn unkey(k: u32) -> f32 {
    if ((k & 0x80000000u) != 0u) {
        return bitcast<f32>(k & 0x7fffffffu);
    }
    return bitcast<f32>(~k);
}

// Index of the largest value, the smallest index on ties (float comparison, as the portable
// kernel: -0 and +0 tie).
fn argmax(t: u32, vocab: u32, lane: u32, g: u32) -> u32 {
    var best_v = -3.0e38;
    var best_i = MAXU;
    for (var j = 0u; j < PER; j++) {
        let c = t * PER + j;
        if (c < vocab && s[c] > best_v) {
            best_v = s[c];
            best_i = c;
        }
    }
    let m = subgroupMax(best_v);
    let mi = subgroupMin(select(MAXU, best_i, best_v == m));
    if (lane == 0u) {
        part_u[g] = vec2<u32>(bitcast<u32>(m), mi);
    }
    workgroupBarrier();
    var bv = -3.0e38;
    var bi = MAXU;
    for (var i = lane; i < WG / SG; i += SG) {
        let ov = bitcast<f32>(part_u[i].x);
        let oi = part_u[i].y;
        if (ov > bv || (ov == bv && oi < bi)) {
            bv = ov;
            bi = oi;
        }
    }
    let mm = subgroupMax(bv);
    return subgroupMin(select(MAXU, bi, bv == mm));
}

// The k-th largest key of the row (1 <= k < vocab): a radix select, 8 bits per pass.
fn kth_key(t: u32, vocab: u32, k: u32, lane: u32) -> u32 {
    var prefix = 0u;
    var krem = k;
    let bpl = 256u / SG;
    for (var ps = 0u; ps < 4u; ps++) {
        let shift = 24u - 8u * ps;
        let hb = (ps % 3u) * 256u;
        // The next pass's histogram was last read two passes ago, before the previous barrier.
        atomicStore(&hist[((ps + 1u) % 3u) * 256u + t], 0u);
        let hmask = (0xffffffffu << shift) << 8u;
        for (var j = 0u; j < PER; j++) {
            let c = j * WG + t;
            if (c < vocab) {
                let kk = key(s[c]);
                if ((kk & hmask) == prefix) {
                    atomicAdd(&hist[hb + ((kk >> shift) & 255u)], 1u);
                }
            }
        }
        workgroupBarrier();
        // Every subgroup scans all bins from the top; lane l holds bins 255 - l*bpl - r.
        var sum = 0u;
        for (var r = 0u; r < bpl; r++) {
            sum += atomicLoad(&hist[hb + 255u - (lane * bpl + r)]);
        }
        var cum = subgroupExclusiveAdd(sum);
        var found = 0u;
        var fk = 0u;
        for (var r = 0u; r < bpl; r++) {
            let bin = 255u - (lane * bpl + r);
            let n = atomicLoad(&hist[hb + bin]);
            if (cum < krem && cum + n >= krem) {
                found = bin + 1u;
                fk = krem - cum;
            }
            cum += n;
        }
        prefix |= (subgroupMax(found) - 1u) << shift;
        krem = subgroupMax(fk);
    }
    return prefix;
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) g: u32,
) {
    let i = wid.x;
    let sess = sessions[i];
    let vocab = p.vocab;
    let talker = p.talker_mode != 0u;
    let row = (p.logits_first + i * p.logits_step) * p.logits_stride;
    let hist_base = sess.slot * p.history_words;

    for (var j = 0u; j < PER; j++) {
        let c = j * WG + t;
        if (c < vocab) {
            s[c] = processed_logit(c, row, hist_base, sess, talker);
        }
    }
    atomicStore(&hist[t], 0u);
    let st = settings(t, talker, sess);
    var code = 0u;
    if (st.sample != 0u) {
        code = draw(t, vocab, st, sess, lane, g);
    } else {
        code = argmax(t, vocab, lane, g);
    }

    if (t == 0u) {
        code = chosen(i, code);
        codes[i * 16u + p.code_col] = code;
        if (talker && code < vocab) {
            history[hist_base + code / 32u] |= 1u << (code % 32u);
        }
    }
}

fn draw(t: u32, vocab: u32, st: Settings, sess: Session, lane: u32, g: u32) -> u32 {
    let vt = g * SG + lane;
    let inv_t = 1.0 / st.temperature;
    // Until the exponentials, thread t touches only ids j * WG + t (no barrier needed).
    for (var j = 0u; j < PER; j++) {
        let c = j * WG + t;
        if (c < vocab && s[c] > NEG) {
            s[c] = s[c] * inv_t;
        }
    }

    var kth = 0u;
    let top_k = min(st.top_k, vocab);
    if (top_k > 0u && top_k < vocab) {
        kth = kth_key(t, vocab, top_k, lane);
    }

    var m = key(-3.0e38);
    for (var j = 0u; j < PER; j++) {
        let c = j * WG + t;
        if (c < vocab && s[c] > NEG && key(s[c]) >= kth) {
            m = max(m, key(s[c]));
        }
    }
    let vmax = unkey(max_min(m, MAXU, lane, g, 0u).x);

    // Softmax numerators; from here thread vt owns chunk reverseBits8(vt) (see the top).
    let u = reverseBits(vt) >> 24u;
    var local = 0.0;
    for (var j = 0u; j < PER; j++) {
        let c = u * PER + j;
        if (c < vocab) {
            var e = 0.0;
            if (s[c] > NEG && key(s[c]) >= kth) {
                e = exp(s[c] - vmax);
            }
            s[c] = e;
            local += e;
        }
    }
    var slot = 0u;
    var total = tree_sum(local, lane, g, slot);

    if (st.top_p < 1.0) {
        let budget = (1.0 - st.top_p) * total;
        var lo = 0u;
        var hi = bitcast<u32>(1.0) + 1u;
        // Each round splits [lo, hi) in 16 and tests the 15 inner cuts: 16^8 > hi.
        for (var round = 0u; round < 8u; round++) {
            slot ^= 1u;
            let span = hi - lo;
            let qd = span / 16u;
            let rm = span % 16u;
            var cut: array<u32, 16>;
            for (var q = 0u; q < 16u; q++) {
                let c = lo + qd * q + (rm * q + 15u) / 16u;
                // Cut 0 and any cut that reaches hi are never tested.
                cut[q] = select(0u, c, q > 0u && c < hi);
            }
            var mass: array<vec4<f32>, 4>;
            for (var j = 0u; j < PER; j++) {
                let c = u * PER + j;
                if (c < vocab && s[c] > 0.0) {
                    let b = bitcast<u32>(s[c]);
                    for (var q = 0u; q < 16u; q++) {
                        if (b < cut[q]) {
                            mass[q / 4u][q % 4u] += s[c];
                        }
                    }
                }
            }
            for (var q = 0u; q < 4u; q++) {
                _ = tree_sum4(mass[q], q, lane, g, slot);
            }
            workgroupBarrier();
            var new_lo = lo;
            var new_hi = hi;
            for (var q = 0u; q < 4u; q++) {
                let ms = tree_cross(q, lane, slot);
                for (var r = 0u; r < 4u; r++) {
                    let c = cut[q * 4u + r];
                    if (c > lo && c < hi) {
                        if (ms[r] <= budget) {
                            new_lo = max(new_lo, c);
                        } else {
                            new_hi = min(new_hi, c);
                        }
                    }
                }
            }
            lo = new_lo;
            hi = new_hi;
        }
        var kept = 0.0;
        for (var j = 0u; j < PER; j++) {
            let c = u * PER + j;
            if (c < vocab && s[c] > 0.0 && bitcast<u32>(s[c]) < lo) {
                s[c] = 0.0;
            }
            if (c < vocab) {
                kept += s[c];
            }
        }
        slot ^= 1u;
        total = tree_sum(kept, lane, g, slot);
    }

    // Inverse CDF over index order: virtual thread vt owns chunk vt. Each lane computes its own
    // chunk sum and the one SG chunks back, for the scan levels below SG.
    let goal = draw_goal(sess, total);
    var chunk = 0.0;
    var prev = 0.0;
    var last_kept = 0u;
    var has_kept = 0u;
    let pc = (vt + WG - SG) % WG;
    for (var j = 0u; j < PER; j++) {
        let c = vt * PER + j;
        if (c < vocab) {
            chunk += s[c];
            if (s[c] > 0.0) {
                last_kept = c;
                has_kept = 1u;
            }
        }
        let cp = pc * PER + j;
        if (cp < vocab) {
            prev += s[cp];
        }
    }
    var a = chunk;
    var b = prev;
    for (var off = 1u; off < SG; off <<= 1u) {
        let src = (lane + SG - off) % SG;
        let av = subgroupShuffle(a, src);
        let bv = subgroupShuffle(b, src);
        var add_a = select(bv, av, lane >= off);
        if (vt < off) {
            add_a = 0.0;
        }
        let add_b = select(0.0, bv, lane >= off);
        a += add_a;
        b += add_b;
    }
    scan_buf[vt] = a;
    workgroupBarrier();
    // Levels SG, 2 SG, …: a scan over the subgroups at this lane.
    var z: array<f32, 64>;
    for (var q = 0u; q <= g; q++) {
        z[q] = scan_buf[q * SG + lane];
    }
    for (var off = 1u; off < WG / SG; off <<= 1u) {
        for (var q = g; q >= off; q--) {
            z[q] = z[q] + z[q - off];
        }
    }
    let end = z[g];
    let start = end - chunk;
    var found = MAXU;
    if (goal >= start && goal < end) {
        var acc = start;
        for (var j = 0u; j < PER; j++) {
            let c = vt * PER + j;
            if (c < vocab && s[c] > 0.0) {
                acc += s[c];
                if (goal < acc) {
                    found = c;
                    break;
                }
            }
        }
    }
    // Fallback (rounding pushed the goal past the total): the last kept entry.
    let r = max_min(select(0u, last_kept + 1u, has_kept != 0u), found, lane, g, 1u);
    if (r.y != MAXU) {
        return r.y;
    }
    return r.x - 1u;
}

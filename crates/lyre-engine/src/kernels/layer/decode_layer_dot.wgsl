// The dot products of decode_layer.wgsl: two runs of bf16 weights (rows or half rows) against
// the workgroup's input vector `vec_in`, a subgroup per pair of runs. A phase's time is mostly
// memory latency, so each lane issues up to sixteen 16-byte loads at once (eight per run) and
// then as many of the remaining ones as are left, so that a run of up to 8 · SG vec4s costs one
// round trip to memory and a longer one one more per 8 · SG. (Issuing a phase's first loads
// before the barrier that precedes it, or the next pair's while the current one is summed,
// measured 0.1 ms slower per frame on the H200.)

// Two runs of n8 vec4s (eight bf16 each): weights from vec4 `a` and `b`, input from vec_in's
// 8-value groups `xa` and `xb`.
struct Runs {
    a: u32,
    b: u32,
    xa: u32,
    xb: u32,
    n8: u32,
}

// Rows `ra` and `ra + stride` of a weight with n rows of k8 vec4s (a row past the end repeats the
// last: loaded, never stored).
fn row_pair(ra: u32, stride: u32, n: u32, k8: u32) -> Runs {
    return Runs(min(ra, n - 1u) * k8, min(ra + stride, n - 1u) * k8, 0u, 0u, k8);
}

// The gate row r and the up row inter + r of the stacked gate|up weight.
fn gate_up_pair(r: u32, inter: u32, k8: u32) -> Runs {
    let rc = min(r, inter - 1u);
    return Runs(rc * k8, (inter + rc) * k8, 0u, 0u, k8);
}

// The two halves of row r (k8 even) of a weight with n rows.
fn row_halves(r: u32, n: u32, k8: u32) -> Runs {
    let base = min(r, n - 1u) * k8;
    let half = k8 / 2u;
    return Runs(base, base + half, 0u, half, half);
}

fn dot8(w: vec4<u32>, i: u32) -> f32 {
    return dot(bf16x4(w.xy), vec_in[2u * i]) + dot(bf16x4(w.zw), vec_in[2u * i + 1u]);
}

// Both runs dotted with vec_in and summed over the subgroup: steps of eight loads per run, then
// one step each of four, two and one for what is left.
fn dot_runs(which: u32, r: Runs, lane: u32) -> vec2<f32> {
    var acc = vec2<f32>(0.0);
    var i = lane;
    for (; i + 7u * SG < r.n8; i += 8u * SG) {
        acc += dot_step4(which, r, i) + dot_step4(which, r, i + 4u * SG);
    }
    if (i + 3u * SG < r.n8) {
        acc += dot_step4(which, r, i);
        i += 4u * SG;
    }
    if (i + SG < r.n8) {
        let a0 = weight(which, r.a + i);
        let a1 = weight(which, r.a + i + SG);
        let b0 = weight(which, r.b + i);
        let b1 = weight(which, r.b + i + SG);
        acc.x += dot8(a0, r.xa + i) + dot8(a1, r.xa + i + SG);
        acc.y += dot8(b0, r.xb + i) + dot8(b1, r.xb + i + SG);
        i += 2u * SG;
    }
    if (i < r.n8) {
        acc += vec2<f32>(dot8(weight(which, r.a + i), r.xa + i), dot8(weight(which, r.b + i), r.xb + i));
    }
    return subgroupAdd(acc);
}

// Four vec4s of each run from `i` (a stride of SG apart): their loads first, then the sums.
fn dot_step4(which: u32, r: Runs, i: u32) -> vec2<f32> {
    let a0 = weight(which, r.a + i);
    let a1 = weight(which, r.a + i + SG);
    let a2 = weight(which, r.a + i + 2u * SG);
    let a3 = weight(which, r.a + i + 3u * SG);
    let b0 = weight(which, r.b + i);
    let b1 = weight(which, r.b + i + SG);
    let b2 = weight(which, r.b + i + 2u * SG);
    let b3 = weight(which, r.b + i + 3u * SG);
    let ia = r.xa + i;
    let ib = r.xb + i;
    return vec2<f32>(
        dot8(a0, ia) + dot8(a1, ia + SG) + dot8(a2, ia + 2u * SG) + dot8(a3, ia + 3u * SG),
        dot8(b0, ib) + dot8(b1, ib + SG) + dot8(b2, ib + 2u * SG) + dot8(b3, ib + 3u * SG));
}

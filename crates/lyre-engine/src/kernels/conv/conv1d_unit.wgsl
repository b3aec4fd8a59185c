// A codec residual unit as one GEMM pass (after conv1d_gemm_common.wgsl): the dilated conv's
// sums, its bias and SnakeBeta, then those outputs as the A operand of the 1 × 1 conv in the
// same workgroup, whose sums get the stream's epilogue. The tile holds every channel (cols <=
// BN, one column tile), so the dilated conv's output never goes to memory.
//
// `p` carries the dilated conv's input and geometry (x, cin4, cols, taps, dil, rows_in, y_rows)
// and the 1 × 1 conv's output and epilogue (y, r, z, flags); `w` (binding 3) holds the dilated
// conv's weights and `bias` (4) the 1 × 1 conv's, which has `cols` inputs and outputs.

@group(0) @binding(12) var<storage, read> w2: array<WeightVec>;
@group(0) @binding(13) var<storage, read> bias1: array<f32>;
@group(0) @binding(14) var<storage, read> act_alpha: array<f32>;
@group(0) @binding(15) var<storage, read> act_inv_beta: array<f32>;

// The dilated conv's outputs of this thread, as named registers for the reason gemm_tile.wgsl
// gives for its accumulators: h{i} holds block row i / (TN / 4), column band i % (TN / 4).
var<private> h0: vec4<f32>;
var<private> h1: vec4<f32>;
var<private> h2: vec4<f32>;
var<private> h3: vec4<f32>;
var<private> h4: vec4<f32>;
var<private> h5: vec4<f32>;
var<private> h6: vec4<f32>;
var<private> h7: vec4<f32>;
var<private> h8: vec4<f32>;
var<private> h9: vec4<f32>;
var<private> h10: vec4<f32>;
var<private> h11: vec4<f32>;
var<private> h12: vec4<f32>;
var<private> h13: vec4<f32>;
var<private> h14: vec4<f32>;
var<private> h15: vec4<f32>;

fn hold(i: u32, v: vec4<f32>) {
    switch (i) {
        case 0u: { h0 = v; }
        case 1u: { h1 = v; }
        case 2u: { h2 = v; }
        case 3u: { h3 = v; }
        case 4u: { h4 = v; }
        case 5u: { h5 = v; }
        case 6u: { h6 = v; }
        case 7u: { h7 = v; }
        case 8u: { h8 = v; }
        case 9u: { h9 = v; }
        case 10u: { h10 = v; }
        case 11u: { h11 = v; }
        case 12u: { h12 = v; }
        case 13u: { h13 = v; }
        case 14u: { h14 = v; }
        default: { h15 = v; }
    }
}

fn held(i: u32) -> vec4<f32> {
    switch (i) {
        case 0u: { return h0; }
        case 1u: { return h1; }
        case 2u: { return h2; }
        case 3u: { return h3; }
        case 4u: { return h4; }
        case 5u: { return h5; }
        case 6u: { return h6; }
        case 7u: { return h7; }
        case 8u: { return h8; }
        case 9u: { return h9; }
        case 10u: { return h10; }
        case 11u: { return h11; }
        case 12u: { return h12; }
        case 13u: { return h13; }
        case 14u: { return h14; }
        default: { return h15; }
    }
}

// The dilated conv's output of channels c0 .. c0 + 3 from their sums: bias, then SnakeBeta;
// zero past the last channel, so that the 1 × 1 conv's padded K adds nothing.
fn dilated_output(sums: vec4<f32>, c0: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var e = 0u; e < 4u; e++) {
        let c = c0 + e;
        if (c < p.cols) {
            v[e] = snake_beta(sums[e] + bias1[c], act_alpha[c], act_inv_beta[c]);
        }
    }
    return v;
}

// Stages chunk j of the 1 × 1 conv: A from the held outputs whose channels fall in it (each
// (row, channel group) is held by exactly one thread), B from its weights.
fn stage_pointwise_chunk(li: u32, tx: u32, ty: u32, j: u32, cin4: u32) {
    for (var q = 0u; q < TM; q++) {
        for (var jb = 0u; jb < TN / 4u; jb++) {
            let c0 = block_col(tx, jb);
            if (c0 / BK == j) {
                stage_x(j, (c0 % BK) / 4u, block_row(ty, q), held(q * (TN / 4u) + jb));
            }
        }
    }
    for (var q = 0u; q < 8u; q++) {
        if (q < W_LOADS) {
            let f = li + q * THREADS;
            let v = f % BN;
            let g = j * (BK / 4u) + f / BN;
            let wv = w2[min(g, cin4 - 1u) * p.cols + min(v, p.cols - 1u)];
            stage_weight(j, f / BN, v, select(WeightVec(), wv, g < cin4 && v < p.cols));
        }
    }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let ns = n_sessions();
    let tx = li % 16u;
    let ty = li / 16u;
    accumulate_conv(li, wid, ns, 0u, 1u);
    let per_part = TM / CS_PARTS;
    for (var part = 0u; part < CS_PARTS; part++) {
        flush_acc(tx, ty, part);
        for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
            for (var jb = 0u; jb < TN / 4u; jb++) {
                hold(q * (TN / 4u) + jb, dilated_output(acc_at(tx, ty, q, jb), block_col(tx, jb)));
            }
        }
    }
    // The 1 × 1 conv: K is the dilated conv's `cols` outputs.
    clear_acc();
    let cin4 = (p.cols + 3u) / 4u;
    let chunks = (cin4 + BK / 4u - 1u) / (BK / 4u);
    for (var j = 0u; j < chunks; j++) {
        stage_pointwise_chunk(li, tx, ty, j, cin4);
        workgroupBarrier();
        mma_chunk(j, tx, ty);
        release_chunk();
    }
    for (var part = 0u; part < CS_PARTS; part++) {
        flush_acc(tx, ty, part);
        for (var q = part * per_part; q < (part + 1u) * per_part; q++) {
            let o = tile_row(wid, block_row(ty, q), ns);
            if (o.y != 0u) {
                store_row(tx, ty, q, 0u, o.x);
            }
        }
    }
}

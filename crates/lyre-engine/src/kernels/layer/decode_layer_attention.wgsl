// decode_layer.wgsl's attention at long contexts. One workgroup walks a head's keys one per
// subgroup at a time, so a head of P keys takes about P / 8 dependent steps; with P above
// 2 · p.chunk_keys the keys are split into up to p.max_chunks contiguous parts, each attended
// by its own workgroup (every workgroup of the grid has work instead of one per head). Each part
// writes its normalised output and softmax state (max, sum) to the sync buffer's scratch, and
// after the grid barrier every workgroup merges the parts as it loads the attention output.

const SCRATCH: u32 = 4u; // first scratch word of `sync`
// Head parts whose states one workgroup merges (n_heads × max_chunks is at most this).
const MAX_PARTS: u32 = 512u;

var<workgroup> wg_state_max: array<f32, MAX_PARTS>;
var<workgroup> wg_state_sum: array<f32, MAX_PARTS>;
// Whether attend_head's results go to the scratch (parts) or to `attn` (whole heads).
var<private> split_parts: bool;

// Parts per head for a row at position `pos` (1: whole heads).
fn chunk_count(pos: u32) -> u32 {
    return clamp((pos + 1u) / p.chunk_keys, 1u, p.max_chunks);
}

// Part `item` (= head · chunks + part) writes its output from scratch word SCRATCH + item ·
// head_dim and its state at SCRATCH + state_base() + 2 · item.
fn state_base() -> u32 {
    return p.n_heads * p.max_chunks * p.head_dim;
}

fn store_out(i: u32, v: f32) {
    if (split_parts) {
        atomicStore(&sync[SCRATCH + i], bitcast<u32>(v));
    } else {
        attn[i] = v;
    }
}

fn store_state(dst: u32, m: f32, l: f32) {
    if (split_parts) {
        let at = SCRATCH + state_base() + 2u * (dst / p.head_dim);
        atomicStore(&sync[at], bitcast<u32>(m));
        atomicStore(&sync[at + 1u], bitcast<u32>(l));
    }
}

fn scratch(i: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&sync[SCRATCH + i]));
}

// Phase B: the heads (chunks = 1) or their parts, spread over the grid. Part c of a head's
// n = pos + 1 keys is keys c·n/chunks ..< (c+1)·n/chunks: never empty, as chunks <= n.
fn attend_chunks(t: u32, group: u32, row: vec2<u32>, chunks: u32) {
    split_parts = chunks > 1u;
    let n = row.y + 1u;
    for (var item = group; item < p.n_heads * chunks; item += p.groups) {
        let head = item / chunks;
        let c = item % chunks;
        let first = c * n / chunks;
        let last = (c + 1u) * n / chunks - 1u;
        let dst = select(head, item, split_parts) * p.head_dim;
        attend_head(t, head, 0u, row.x, row.y, first, last, dst);
        workgroupBarrier();
    }
}

// Phase C's input: every head's parts merged (weights sum_c · exp(max_c − max) / Σ) into vec_in.
fn load_merged(t: u32, chunks: u32) {
    let parts = p.n_heads * chunks;
    for (var i = t; i < parts; i += WG) {
        wg_state_max[i] = scratch(state_base() + 2u * i);
        wg_state_sum[i] = scratch(state_base() + 2u * i + 1u);
    }
    workgroupBarrier();
    // Thread h turns head h's states into its parts' weights (in wg_state_sum).
    for (var h = t; h < p.n_heads; h += WG) {
        var m = NEG;
        for (var c = 0u; c < chunks; c++) {
            m = max(m, wg_state_max[h * chunks + c]);
        }
        var total = 0.0;
        for (var c = 0u; c < chunks; c++) {
            let w = wg_state_sum[h * chunks + c] * exp(wg_state_max[h * chunks + c] - m);
            wg_state_sum[h * chunks + c] = w;
            total += w;
        }
        for (var c = 0u; c < chunks; c++) {
            wg_state_sum[h * chunks + c] /= total;
        }
    }
    workgroupBarrier();
    let hd = p.head_dim;
    for (var i = t; i < p.n_heads * hd / 4u; i += WG) {
        var v = vec4<f32>(0.0);
        for (var k = 0u; k < 4u; k++) {
            let e = 4u * i + k;
            let h = e / hd;
            for (var c = 0u; c < chunks; c++) {
                let item = h * chunks + c;
                v[k] += wg_state_sum[item] * scratch(item * hd + e % hd);
            }
        }
        vec_in[i] = v;
    }
}

// One whole decoder layer for one row (a tick of one session) in one dispatch of p.groups
// workgroups, its five steps separated by grid-wide barriers instead of dispatches:
//   A  qkv = W_qkv · rmsnorm(x)                       (input RMSNorm, gamma = input_norm)
//   B  q/k-norm + RoPE, KV-cache write, attention      (attention_rope_head_sg.wgsl, per q head,
//                                                      or per part of its keys at long contexts:
//                                                      decode_layer_attention.wgsl)
//   C  x_mid = x + W_o · attn
//   D  act = SwiGLU(W_gate_up · rmsnorm(x_mid))        (post-attention RMSNorm)
//   E  x = x_mid + W_down · act
// the same math as the five dispatches of model/transformer.rs at one row.
//
// Every workgroup must be resident at once (p.groups is at most what the GPU runs together; 1 on
// CPU adapters). The grid barrier does not invalidate other workgroups' L1 lines: a plain load
// after it returns a stale value if its line was cached before the writer stored (seen on the
// H200 when x was read, rewritten and read again in one dispatch). So every activation that
// crosses workgroups is written once per dispatch into a buffer no workgroup has read yet in
// it, and read only after the barrier that follows: q|k|v (A), attn (B), x_mid, the residual
// stream after attention (C), act (D). x itself is read in A, C and E and written only in E,
// where nothing reads it again before the dispatch ends. Dispatch boundaries clear L1.
// Needs hidden to be a multiple of 8, the q width and inter of 16, and attend_head's head_dim
// rule.

// vec4s of the widest input vector (hidden, q width, inter).
override VEC4S: u32 = 256u;

// The barrier's wait: 16 rounds of 65536 loads of the counter, then it gives up.
const SPIN_ROUNDS: u32 = 16u;
const SPINS_PER_ROUND: u32 = 65536u;

struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    has_norm: u32,
    eps: f32,
    scale: f32,
    hidden: u32,
    inter: u32,
    // Workgroups in the grid; a power of two, so the barrier counter may wrap. A uniform, not an
    // override: naga 30 evaluated `x % GROUPS` with an override `GROUPS` as if it were 1 (on
    // lavapipe the barrier then never waited).
    groups: u32,
    // Most workgroups one head's keys are split over, and the fewest keys each part gets
    // (decode_layer_attention.wgsl).
    max_chunks: u32,
    chunk_keys: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read_write> qkv: array<f32>;
// Bindings 3 and 4 (q_norm, k_norm): qk_norm_weights.wgsl; 5-8 (RoPE tables, KV cache):
// attention_rope_head_sg.wgsl.
@group(0) @binding(9) var<storage, read_write> attn: array<f32>;
@group(0) @binding(10) var<storage, read_write> x: array<f32>;
@group(0) @binding(11) var<storage, read_write> act: array<f32>;
// [0]: barrier arrivals (every dispatch adds a multiple of groups); [1]: waits that gave up;
// from [4]: split attention's partial outputs and softmax states.
@group(0) @binding(12) var<storage, read_write> sync: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read> input_norm: array<vec4<u32>>;
@group(0) @binding(14) var<storage, read> w_qkv: array<vec4<u32>>;
@group(0) @binding(15) var<storage, read> w_o: array<vec4<u32>>;
@group(0) @binding(16) var<storage, read> post_norm: array<vec4<u32>>;
@group(0) @binding(17) var<storage, read> w_gate_up: array<vec4<u32>>;
@group(0) @binding(18) var<storage, read> w_down: array<vec4<u32>>;
@group(0) @binding(19) var<storage, read_write> x_mid: array<f32>;

// Which buffer a helper reads (literal arguments, so each call site specialises).
const QKV: u32 = 0u;
const O: u32 = 1u;
const GATE_UP: u32 = 2u;
const DOWN: u32 = 3u;
const INPUT_NORM: u32 = 0u;
const POST_NORM: u32 = 1u;
const X: u32 = 0u;
const ATTN: u32 = 1u;
const ACT: u32 = 2u;
const X_MID: u32 = 3u;

var<workgroup> vec_in: array<vec4<f32>, VEC4S>;
var<workgroup> wg_part: array<f32, MAX_NSG>;
var<workgroup> wg_row: vec2<u32>;

fn load_qkv(i: u32) -> f32 {
    return qkv[i];
}

fn weight(which: u32, i: u32) -> vec4<u32> {
    switch which {
        case 0u: { return w_qkv[i]; }
        case 1u: { return w_o[i]; }
        case 2u: { return w_gate_up[i]; }
        default: { return w_down[i]; }
    }
}

fn activation(which: u32, i: u32) -> f32 {
    switch which {
        case 0u: { return x[i]; }
        case 1u: { return attn[i]; }
        case 2u: { return act[i]; }
        default: { return x_mid[i]; }
    }
}

fn gamma8(which: u32, i: u32) -> vec4<u32> {
    if (which == INPUT_NORM) {
        return input_norm[i];
    }
    return post_norm[i];
}

// The sum of `v` over the workgroup (uniform control flow).
fn workgroup_sum(t: u32, v: f32) -> f32 {
    let s = subgroupAdd(v);
    if (t % SG == 0u) {
        wg_part[t / SG] = s;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var g = 0u; g < WG / SG; g++) {
        total += wg_part[g];
    }
    workgroupBarrier();
    return total;
}

// Copies the first `n` values of activation `which` into vec_in; returns this thread's sum of
// their squares.
fn load_input(t: u32, which: u32, n: u32) -> f32 {
    var ss = 0.0;
    for (var i = t; i < n / 4u; i += WG) {
        let v = vec4<f32>(
            activation(which, 4u * i), activation(which, 4u * i + 1u),
            activation(which, 4u * i + 2u), activation(which, 4u * i + 3u));
        vec_in[i] = v;
        ss += dot(v, v);
    }
    return ss;
}

// vec_in = rmsnorm(activation `src`) · gamma. A thread's first gamma load is issued before the
// sum of squares, so that its latency hides behind the sum's instead of following it.
fn load_normed(t: u32, src: u32, gamma: u32) {
    var first_g = vec4<u32>(0u);
    if (t < p.hidden / 8u) {
        first_g = gamma8(gamma, t);
    }
    let total = workgroup_sum(t, load_input(t, src, p.hidden));
    let scale = inverseSqrt(total / f32(p.hidden) + p.eps);
    for (var i = t; i < p.hidden / 8u; i += WG) {
        var g = first_g;
        if (i != t) {
            g = gamma8(gamma, i);
        }
        vec_in[2u * i] *= bf16x4(g.xy) * scale;
        vec_in[2u * i + 1u] *= bf16x4(g.zw) * scale;
    }
    workgroupBarrier();
}

// Element r of the residual stream `src` on lane 0 (0 elsewhere and past the last row), loaded
// before the dot product it is added to, so that its latency hides behind the weights' instead
// of following them.
fn residual_at(lane: u32, src: u32, r: u32) -> f32 {
    var v = 0.0;
    if (lane == 0u && r < p.hidden) {
        v = activation(src, r);
    }
    return v;
}

// Waits until every workgroup has arrived (a bounded spin: a grid that is not resident counts
// a timeout in sync[1] and runs on rather than hanging the GPU).
fn grid_barrier(t: u32) {
    storageBarrier();
    if (p.groups > 1u && t == 0u) {
        let arrived = atomicAdd(&sync[0], 1u);
        let release = (arrived & ~(p.groups - 1u)) + p.groups;
        // Until the counter reaches `release`, in wrapping arithmetic. lavapipe ends any loop
        // after 65535 iterations (llvmpipe's loop limiter), so the wait is an outer loop of
        // inner ones, and whether it was released is checked after it, not assumed.
        for (var outer = 0u; outer < SPIN_ROUNDS && !released(release); outer++) {
            for (var spins = 0u; spins < SPINS_PER_ROUND && !released(release); spins++) {
            }
        }
        if (!released(release)) {
            atomicAdd(&sync[1], 1u);
        }
    }
    storageBarrier();
}

fn released(release: u32) -> bool {
    return atomicLoad(&sync[0]) - release < 0x80000000u;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    if (t == 0u) {
        wg_row = vec2<u32>(rows[0].slot, rows[0].pos);
    }
    let row = workgroupUniformLoad(&wg_row);
    let lane = t % SG;
    let nsg = WG / SG;
    // Subgroup sg of workgroup g takes output rows first + sg, first + sg + stride, ...; the
    // trip counts are the same for the whole workgroup, so subgroupAdd stays in uniform flow.
    let first = wid.x * nsg;
    let stride = p.groups * nsg;
    let sg = t / SG;
    let h = p.hidden;
    let q_width = p.n_heads * p.head_dim;
    let qkv_width = q_width + 2u * p.n_kv_heads * p.head_dim;

    // A: qkv, two rows (a stride apart) per subgroup at a time.
    load_normed(t, X, INPUT_NORM);
    for (var r0 = first; r0 < qkv_width; r0 += 2u * stride) {
        let ra = r0 + sg;
        let d = dot_runs(QKV, row_pair(ra, stride, qkv_width, h / 8u), lane);
        if (lane == 0u && ra < qkv_width) {
            qkv[ra] = d.x;
        }
        if (lane == 0u && ra + stride < qkv_width) {
            qkv[ra + stride] = d.y;
        }
    }
    grid_barrier(t);

    // B: attention, one q head (or one part of a head's keys) per workgroup at a time.
    let chunks = chunk_count(row.y);
    attend_chunks(t, wid.x, row, chunks);
    grid_barrier(t);

    // C: x_mid = x + W_o · attn, a row's two halves at once.
    if (chunks > 1u) {
        load_merged(t, chunks);
    } else {
        _ = load_input(t, ATTN, q_width);
    }
    workgroupBarrier();
    for (var r0 = first; r0 < h; r0 += stride) {
        let r = r0 + sg;
        let residual = residual_at(lane, X, r);
        let d = dot_runs(O, row_halves(r, h, q_width / 8u), lane);
        if (lane == 0u && r < h) {
            x_mid[r] = residual + d.x + d.y;
        }
    }
    grid_barrier(t);

    // D: act = SwiGLU(gate_up), a subgroup computing the gate and up rows of one output.
    load_normed(t, X_MID, POST_NORM);
    for (var r0 = first; r0 < p.inter; r0 += stride) {
        let r = r0 + sg;
        let gu = dot_runs(GATE_UP, gate_up_pair(r, p.inter, h / 8u), lane);
        if (lane == 0u && r < p.inter) {
            act[r] = gu.x / (1.0 + exp(min(-gu.x, 80.0))) * gu.y;
        }
    }
    grid_barrier(t);

    // E: x = x_mid + W_down · act.
    _ = load_input(t, ACT, p.inter);
    workgroupBarrier();
    for (var r0 = first; r0 < h; r0 += stride) {
        let r = r0 + sg;
        let residual = residual_at(lane, X_MID, r);
        let d = dot_runs(DOWN, row_halves(r, h, p.inter / 8u), lane);
        if (lane == 0u && r < h) {
            x[r] = residual + d.x + d.y;
        }
    }
}

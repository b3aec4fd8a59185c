// The part of the conv1d kernels that every variant shares (prepended after seq_view.wgsl and
// snake_beta.wgsl): the parameters, every binding but the weights (binding 3:
// conv1d_weights_f32.wgsl or conv1d_weights_f16.wgsl) and the epilogue of one output value. See
// conv1d.wgsl for the math. The epilogue may fuse the SnakeBeta that the next layer reads: as the
// activation (SNAKE_OUTPUT: y = snake(bias + sum)), or as a second store of the finished value
// through it (SNAKE_COPY: z = snake(y), y kept as the residual stream).

struct Params {
    x: View,
    y: View,
    r: View,
    z: View,
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
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> scale: array<f32>;
@group(0) @binding(6) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> res: array<f32>;
@group(0) @binding(8) var<storage, read_write> y: array<f32>;
@group(0) @binding(9) var<storage, read> snake_alpha: array<f32>;
@group(0) @binding(10) var<storage, read> snake_inv_beta: array<f32>;
@group(0) @binding(11) var<storage, read_write> z: array<f32>;

const HAS_BIAS: u32 = 1u;
const HAS_SCALE: u32 = 2u;
const ACCUMULATE: u32 = 4u;
const RESIDUAL: u32 = 8u;
const ACT_SHIFT: u32 = 4u;
const ACT_BITS: u32 = 15u;
const SNAKE_OUTPUT: u32 = 256u;
const SNAKE_COPY: u32 = 512u;
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

// The epilogue of one output: `acc` is the reduction for input row `t` of session `s` and
// virtual column `v`; writes output row `t * up + phase`, channel `o`.
fn store_output(s: u32, t: u32, v: u32, acc: f32) {
    let t_out = i32(t * p.up + v / p.cout);
    store_at(output_row(s, t_out), v % p.cout, acc);
}

// Where output row `t_out` of session `s` starts in y, with RESIDUAL in res, with SNAKE_COPY in z.
fn output_row(s: u32, t_out: i32) -> vec3<u32> {
    var r = 0u;
    if ((p.flags & RESIDUAL) != 0u) {
        r = row_offset(p.r, s, t_out);
    }
    var zr = 0u;
    if ((p.flags & SNAKE_COPY) != 0u) {
        zr = row_offset(p.z, s, t_out);
    }
    return vec3<u32>(row_offset(p.y, s, t_out), r, zr);
}

// The epilogue of channel `o` of the output row at `rows` (output_row).
fn store_at(rows: vec3<u32>, o: u32, acc: f32) {
    var val = acc;
    if ((p.flags & HAS_BIAS) != 0u) {
        val += bias[o];
    }
    val = activate(val, (p.flags >> ACT_SHIFT) & ACT_BITS);
    if ((p.flags & SNAKE_OUTPUT) != 0u) {
        val = snake_beta(val, snake_alpha[o], snake_inv_beta[o]);
    }
    if ((p.flags & HAS_SCALE) != 0u) {
        val *= scale[o];
    }
    if ((p.flags & RESIDUAL) != 0u) {
        val += res[rows.y + o];
    }
    let yi = rows.x + o;
    if ((p.flags & ACCUMULATE) != 0u) {
        val += y[yi];
    }
    y[yi] = val;
    if ((p.flags & SNAKE_COPY) != 0u) {
        z[rows.z + o] = snake_beta(val, snake_alpha[o], snake_inv_beta[o]);
    }
}

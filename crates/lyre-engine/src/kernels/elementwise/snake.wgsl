// SnakeBeta over sequence views: y = x + inv_beta[c] * sin(alpha[c] * x)^2, with alpha = exp(log
// alpha) and inv_beta = 1 / (exp(log beta) + 1e-9) precomputed on the CPU.
// Grid: x = a fixed number of workgroups striding over the session's rows × channels, y = session.

struct Params {
    x: View,
    y: View,
    channels: u32,
    rows: u32,
    threads: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> alpha: array<f32>;
@group(0) @binding(4) var<storage, read> inv_beta: array<f32>;
@group(0) @binding(5) var<storage, read> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;

// sin(v)^2 with its own range reduction (n = round(v / (pi/2)), Cody-Waite in three parts) and
// the Cephes sinf/cosf polynomials on [-pi/4, pi/4], so the result does not depend on the
// driver's sin; accurate to a few ulp for |v| < 1e5.
fn sin_squared(v: f32) -> f32 {
    let n = round(v * 0.636619772367581343);
    let r = ((v - n * 1.5703125) - n * 4.837512969970703125e-4) - n * 7.54978995489188216e-8;
    let z = r * r;
    var f: f32;
    if ((i32(n) & 1) == 0) {
        f = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    } else {
        f = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z
            - 0.5 * z + 1.0;
    }
    return f * f;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = wid.y;
    if (s >= n_sessions()) {
        return;
    }
    let n = p.rows * p.channels;
    for (var e = gid.x; e < n; e += p.threads) {
        let t = i32(e / p.channels);
        let c = e % p.channels;
        let v = x[row_offset(p.x, s, t) + c];
        y[row_offset(p.y, s, t) + c] = v + inv_beta[c] * sin_squared(alpha[c] * v);
    }
}

// SnakeBeta, x + inv_beta * sin(alpha * x)^2, for the snake kernel and the conv epilogue that
// fuses it (prepended to both, so the two compute it alike).

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

fn snake_beta(v: f32, alpha: f32, inv_beta: f32) -> f32 {
    return v + inv_beta * sin_squared(alpha * v);
}

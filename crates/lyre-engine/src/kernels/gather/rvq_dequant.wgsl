// Split-RVQ dequantisation: for each session and frame, the first codebook's vector and the sum of
// the remaining codebooks' vectors, side by side: y[s, t] = [table[0][c0] | sum_{q>=1} table[q][cq]].
// (The two 1x1 output projections follow as one conv over the concatenated row.) Codes are
// `[session][frame][books]` u32, clamped to the codebook (the engine may pass an EOS id on a
// frame it discards). Grid: x = output channels, y = session, z = frame.

struct Params {
    y: View,
    dim: u32,
    books: u32,
    codebook_size: u32,
    frames: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> codes: array<u32>;
@group(0) @binding(4) var<storage, read> table: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

fn book_vector(s: u32, t: u32, q: u32, d: u32) -> f32 {
    let code = min(codes[(s * p.frames + t) * p.books + q], p.codebook_size - 1u);
    return table[(q * p.codebook_size + code) * p.dim + d];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = gid.x;
    let s = wid.y;
    let t = wid.z;
    if (i >= 2u * p.dim || s >= n_sessions()) {
        return;
    }
    var v: f32;
    if (i < p.dim) {
        v = book_vector(s, t, 0u, i);
    } else {
        v = 0.0;
        for (var q = 1u; q < p.books; q++) {
            v += book_vector(s, t, q, i - p.dim);
        }
    }
    y[row_offset(p.y, s, i32(t)) + i] = v;
}

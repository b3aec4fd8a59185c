// The register-blocked tile shared by the GEMM kernels (matmul_bf16_gemm.wgsl, conv1d_gemm.wgsl),
// prepended to each: a workgroup of 4 * BM threads computes BM rows × 64 columns of
// C = A · B, K in chunks of 32. Each chunk of both operands is staged in workgroup memory
// k-major, xs[k][row] and ws[k][col], so thread (tx, ty) reads one vec4 of four rows and one
// vec4 of four columns per k and accumulates their outer product: 16 FMAs per two 16-byte loads,
// rows 4 ty .. 4 ty + 3 and columns 4 tx .. 4 tx + 3 of the tile. Each k row is padded by four
// floats so that the transposed stores of the loaders spread over the memory banks.
//
// The kernel supplies the loaders: it calls stage_x / stage_w with four consecutive k values of
// one row / column, then workgroupBarrier(), mma_chunk(), workgroupBarrier().

override BM: u32 = 64u; // rows per tile: 16, 32 or 64

const GEMM_BN: u32 = 64u;
const GEMM_BK: u32 = 32u;
// vec4s per k row of ws: 64 columns + 4 floats of padding (xs: see xs_row).
const WS_ROW: u32 = 17u;

var<workgroup> gemm_xs: array<vec4<f32>, 544>; // [GEMM_BK][xs_row()], four rows per vec4
var<workgroup> gemm_ws: array<vec4<f32>, 544>; // [GEMM_BK][WS_ROW], four columns per vec4

// The 4 × 4 accumulator block: acc_i holds row 4 ty + i, columns 4 tx .. 4 tx + 3.
var<private> acc0: vec4<f32>;
var<private> acc1: vec4<f32>;
var<private> acc2: vec4<f32>;
var<private> acc3: vec4<f32>;

fn xs_row() -> u32 {
    return (BM + 4u) / 4u;
}

// Stores A[row][4 k4 .. 4 k4 + 3] (chunk-relative k) into xs.
fn stage_x(k4: u32, row: u32, v: vec4<f32>) {
    let s = xs_row();
    let i = 4u * k4 * s + row / 4u;
    let c = row % 4u;
    gemm_xs[i][c] = v.x;
    gemm_xs[i + s][c] = v.y;
    gemm_xs[i + 2u * s][c] = v.z;
    gemm_xs[i + 3u * s][c] = v.w;
}

// Stores B[4 k4 .. 4 k4 + 3][col] (chunk-relative k) into ws.
fn stage_w(k4: u32, col: u32, v: vec4<f32>) {
    let i = 4u * k4 * WS_ROW + col / 4u;
    let c = col % 4u;
    gemm_ws[i][c] = v.x;
    gemm_ws[i + WS_ROW][c] = v.y;
    gemm_ws[i + 2u * WS_ROW][c] = v.z;
    gemm_ws[i + 3u * WS_ROW][c] = v.w;
}

// Adds the staged chunk's products to this thread's block.
fn mma_chunk(tx: u32, ty: u32) {
    let s = xs_row();
    for (var k = 0u; k < GEMM_BK; k++) {
        let a = gemm_xs[k * s + ty];
        let b = gemm_ws[k * WS_ROW + tx];
        acc0 += a.x * b;
        acc1 += a.y * b;
        acc2 += a.z * b;
        acc3 += a.w * b;
    }
}

// Row i (0..3) of this thread's block.
fn acc_row(i: u32) -> vec4<f32> {
    switch (i) {
        case 0u: { return acc0; }
        case 1u: { return acc1; }
        case 2u: { return acc2; }
        default: { return acc3; }
    }
}

// The register-blocked tile shared by the GEMM kernels (matmul_bf16_gemm.wgsl, conv1d_gemm.wgsl),
// prepended to each: a workgroup of 16 × WGY threads computes BM = WGY·TM rows × BN = 16·TN
// columns of C = A · B, K in chunks of BK. Each chunk of both operands is staged in workgroup
// memory k-major, xs[k][row] and ws[k][col], so thread (tx, ty) reads TM/4 vec4s of four rows
// and TN/4 vec4s of four columns per k and accumulates their outer product: TM·TN FMAs per
// (TM + TN)/4 16-byte loads. Its rows are 4 ty .. 4 ty + 3 of every 4·WGY-row band and its
// columns 4 tx .. 4 tx + 3 of every 64-column band, so that neighbouring threads read
// neighbouring vec4s. Each k row is padded by four floats so that the loaders' transposed
// stores spread over the memory banks.
//
// Shapes (gemm_tile.rs): TM = TN = 4 with BK = 32 and WGY = 4, 8, 16 (tiles of 16, 32, 64
// rows × 64); TM = 8 with BK = 16, WGY = 16 and TN = 4 or 8 (128 × 64 or 128 × 128). Workgroup memory holds
// BK·(BM + 4) + BK·(BN + 4) floats, at most 17 KiB for these shapes.
//
// The kernel supplies the loaders: for chunk c it calls stage_x / stage_w with four consecutive
// k values of one row / column, then workgroupBarrier(), mma_chunk(c), release_chunk(); after
// the K loop, for each part of CS_PARTS in turn, flush_acc(part) in uniform control flow, then
// acc_at() for that part's block rows (TM / CS_PARTS of them) in its epilogue. coop_tile.wgsl
// has the same interface on cooperative matrices. Here the sums stay in registers (one part)
// and the chunks are staged in one buffer, so the chunk index only matters there.

override TM: u32 = 4u; // rows per thread: 4 or 8
override TN: u32 = 4u; // columns per thread: 4 or 8
override BK: u32 = 32u; // K per chunk: 16 or 32
override WGY: u32 = 16u; // threads per column of the workgroup (16 × WGY threads)
override BM: u32 = WGY * TM;
override BN: u32 = 16u * TN;
override THREADS: u32 = 16u * WGY;
const CS_PARTS: u32 = 1u;
// The loaders' order (tile_loads.wgsl): threads that load neighbouring vec4s of a row store to
// the same banks here (stage_x transposes), so each thread loads one row; the contiguous order
// is here for tests on adapters without cooperative matrices (GemmTile::contiguous_loads).
override CONTIGUOUS_LOADS: bool = false;

var<workgroup> gemm_xs: array<vec4<f32>, 544>; // [BK][xs_row()], four rows per vec4
var<workgroup> gemm_ws: array<vec4<f32>, 544>; // [BK][ws_row()], four columns per vec4

// The accumulator block: acc{q}{j} holds block row q (tile row block_row(ty, q)) and the four
// columns of column band j (block_col(tx, j)). They are separate variables, touched only by
// name or through the switch in acc_at, because a private array indexed by a loop variable
// that the driver does not unroll lives in local memory on NVIDIA (every FMA a load and a
// store: 10× slower, measured on the H200).
var<private> acc00: vec4<f32>;
var<private> acc01: vec4<f32>;
var<private> acc10: vec4<f32>;
var<private> acc11: vec4<f32>;
var<private> acc20: vec4<f32>;
var<private> acc21: vec4<f32>;
var<private> acc30: vec4<f32>;
var<private> acc31: vec4<f32>;
var<private> acc40: vec4<f32>;
var<private> acc41: vec4<f32>;
var<private> acc50: vec4<f32>;
var<private> acc51: vec4<f32>;
var<private> acc60: vec4<f32>;
var<private> acc61: vec4<f32>;
var<private> acc70: vec4<f32>;
var<private> acc71: vec4<f32>;

fn xs_row() -> u32 {
    return (BM + 4u) / 4u;
}

fn ws_row() -> u32 {
    return (BN + 4u) / 4u;
}

// Stores A[row][4 k4 .. 4 k4 + 3] (chunk-relative k) into xs.
fn stage_x(chunk: u32, k4: u32, row: u32, v: vec4<f32>) {
    let s = xs_row();
    let i = 4u * k4 * s + row / 4u;
    let c = row % 4u;
    gemm_xs[i][c] = v.x;
    gemm_xs[i + s][c] = v.y;
    gemm_xs[i + 2u * s][c] = v.z;
    gemm_xs[i + 3u * s][c] = v.w;
}

// Stores B[4 k4 .. 4 k4 + 3][col] (chunk-relative k) into ws.
fn stage_w(chunk: u32, k4: u32, col: u32, v: vec4<f32>) {
    let s = ws_row();
    let i = 4u * k4 * s + col / 4u;
    let c = col % 4u;
    gemm_ws[i][c] = v.x;
    gemm_ws[i + s][c] = v.y;
    gemm_ws[i + 2u * s][c] = v.z;
    gemm_ws[i + 3u * s][c] = v.w;
}

fn clear_acc() {
    acc00 = vec4<f32>(0.0);
    acc01 = vec4<f32>(0.0);
    acc10 = vec4<f32>(0.0);
    acc11 = vec4<f32>(0.0);
    acc20 = vec4<f32>(0.0);
    acc21 = vec4<f32>(0.0);
    acc30 = vec4<f32>(0.0);
    acc31 = vec4<f32>(0.0);
    acc40 = vec4<f32>(0.0);
    acc41 = vec4<f32>(0.0);
    acc50 = vec4<f32>(0.0);
    acc51 = vec4<f32>(0.0);
    acc60 = vec4<f32>(0.0);
    acc61 = vec4<f32>(0.0);
    acc70 = vec4<f32>(0.0);
    acc71 = vec4<f32>(0.0);
}

// Adds the staged chunk's products to this thread's block. The shape tests are on override
// constants, so each pipeline keeps only its own branch.
fn mma_chunk(chunk: u32, tx: u32, ty: u32) {
    let xs = xs_row();
    let ws = ws_row();
    for (var k = 0u; k < BK; k++) {
        let a0 = gemm_xs[k * xs + ty];
        let b0 = gemm_ws[k * ws + tx];
        acc00 += a0.x * b0;
        acc10 += a0.y * b0;
        acc20 += a0.z * b0;
        acc30 += a0.w * b0;
        if (TN == 8u) {
            let b1 = gemm_ws[k * ws + 16u + tx];
            acc01 += a0.x * b1;
            acc11 += a0.y * b1;
            acc21 += a0.z * b1;
            acc31 += a0.w * b1;
            if (TM == 8u) {
                let a1 = gemm_xs[k * xs + WGY + ty];
                acc40 += a1.x * b0;
                acc50 += a1.y * b0;
                acc60 += a1.z * b0;
                acc70 += a1.w * b0;
                acc41 += a1.x * b1;
                acc51 += a1.y * b1;
                acc61 += a1.z * b1;
                acc71 += a1.w * b1;
            }
        } else if (TM == 8u) {
            let a1 = gemm_xs[k * xs + WGY + ty];
            acc40 += a1.x * b0;
            acc50 += a1.y * b0;
            acc60 += a1.z * b0;
            acc70 += a1.w * b0;
        }
    }
}

// Tile-relative row of this thread's block row `q` (0 .. TM - 1).
fn block_row(ty: u32, q: u32) -> u32 {
    return (q / 4u) * 4u * WGY + 4u * ty + q % 4u;
}

// Tile-relative first column of this thread's column band `j` (0 .. TN/4 - 1).
fn block_col(tx: u32, j: u32) -> u32 {
    return j * 64u + 4u * tx;
}

// Waits until every thread has multiplied the chunk, before the next is staged in its place.
fn release_chunk() {
    workgroupBarrier();
}

// Nothing to do here: the sums are already in registers (coop_tile.wgsl stores its own).
fn flush_acc(tx: u32, ty: u32, part: u32) {}

// The accumulator of block row `q`, column band `j` of thread (tx, ty).
fn acc_at(tx: u32, ty: u32, q: u32, j: u32) -> vec4<f32> {
    switch (2u * q + j) {
        case 0u: { return acc00; }
        case 1u: { return acc01; }
        case 2u: { return acc10; }
        case 3u: { return acc11; }
        case 4u: { return acc20; }
        case 5u: { return acc21; }
        case 6u: { return acc30; }
        case 7u: { return acc31; }
        case 8u: { return acc40; }
        case 9u: { return acc41; }
        case 10u: { return acc50; }
        case 11u: { return acc51; }
        case 12u: { return acc60; }
        case 13u: { return acc61; }
        case 14u: { return acc70; }
        default: { return acc71; }
    }
}

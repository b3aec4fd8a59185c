enable f16;
enable wgpu_cooperative_matrix;

// gemm_tile.wgsl's interface on cooperative matrices (tensor cores): the same tile shapes and
// loaders, but each chunk is staged in f16 (operands; the official model computes in bf16, whose
// mantissa is shorter) and every subgroup of 32 multiplies 16 × 16 × 16 blocks with f32
// accumulators. Prepended first to a kernel (the `enable`s must open the module), and used only
// where the adapter offers 16 × 16 × 16 f16 · f16 + f32 at subgroup scope with subgroups of 32
// (gpu::GpuContext::has_coop_f16).
//
// A subgroup owns a block of 16 · SG_TR rows × 32 columns of C: tiles of 16, 32 and 64 rows × 64
// and 32 × 128 (GemmTile::COOP_SHORT) hold two 16 × 16 accumulators per subgroup (SG_TR = 1 or
// 2), 64 × 128 (GemmTile::COOP_WIDE) four, 128 × 128 (GemmTile::COOP_TALL) eight (SG_TR = 4):
// each 16 × 16 block of B it loads is multiplied with SG_TR blocks of A.
//
// Tiles of up to 64 rows and K chunks of 32 stage their chunks in two buffers, chunk c in buffer
// c % 2: a subgroup may stage chunk c + 1 while another still multiplies chunk c, so one barrier
// per chunk (after staging) is enough, and release_chunk() has nothing to wait for. A chunk of
// the 128-row tile, or of K 64 (GemmTile::COOP_WIDE_K64 and COOP_SHORT), fills both buffers'
// space: such a tile has one buffer, and waits in release_chunk() as the register tile does.
//
// After the K loop the sums go through workgroup memory in CS_PARTS parts (one per 16-row band
// of a subgroup's block, so every subgroup stores in each part): flush_acc(part) stores a part,
// and acc_at() hands each thread the same number of values the register tile would, so the
// kernels' epilogues are shared. Each part holds 16 KiB, which leaves room for the second
// staging buffer.

override TM: u32 = 4u;
override TN: u32 = 4u;
override BK: u32 = 32u;
override WGY: u32 = 16u;
override BM: u32 = WGY * TM;
override BN: u32 = 16u * TN;
override THREADS: u32 = 16u * WGY;
// f16 per staged row: a row of K plus 16 bytes, so that consecutive rows start in different
// banks while every 16 × 16 block stays 16-byte aligned.
override XS: u32 = BK + 8u;
// 16-row bands of C per subgroup: the tile's 16 × 16 blocks over its subgroups, two per band.
override SG_TR: u32 = BM * BN / (8u * THREADS * 2u);
// Parts of C staged one after the other in coop_cs; the epilogue takes TM / CS_PARTS block rows
// of each.
override CS_PARTS: u32 = SG_TR;
override STAGE_BUFFERS: u32 = select(2u, 1u, BM > 64u || BK > 32u);
// vec4s of one staging buffer: 64 rows × (32 + 8) f16 (with one buffer 128 rows × 40 or 64 ×
// 72), and 128 columns × 40 (with one buffer 128 × 72 fills both buffers' space).
override XS_BUFFER: u32 = 1280u / STAGE_BUFFERS;
const WS_BUFFER: u32 = 1280u;
// The loaders' order (tile_loads.wgsl): neighbouring threads load neighbouring
// vec4s of a row or column, which stage_x and stage_w store side by side, so that a subgroup's
// loads cover whole rows of the chunk.
override CONTIGUOUS_LOADS: bool = true;

// Two buffers of at most 64 rows × (32 + 8) f16 and 128 columns × (32 + 8) (or one of 128 rows
// and one of 128 columns), and a part of C of 4096 f32 (32 rows × 128 or 64 × 64): 46 KiB, so a kernel may add at most 2 KiB of its own to
// stay within 48 KiB. Cooperative loads and stores need 16-byte aligned
// addresses, and the driver lays workgroup variables out in an order of its own: every
// workgroup variable of a kernel that includes this file must be a multiple of 16 bytes.
// Staged as vec4s of f16 (one 8-byte store per four values; four scalar stores measured slower);
// the cooperative loads read them as f16 matrices with strides in vec4s.
var<workgroup> coop_xs: array<vec4<f16>, 1280>;
var<workgroup> coop_ws: array<vec4<f16>, 2560>;
var<workgroup> coop_cs: array<f32, 4096>;

var<private> cacc00: coop_mat16x16<f32, C>;
var<private> cacc01: coop_mat16x16<f32, C>;
var<private> cacc10: coop_mat16x16<f32, C>;
var<private> cacc11: coop_mat16x16<f32, C>;
var<private> cacc20: coop_mat16x16<f32, C>;
var<private> cacc21: coop_mat16x16<f32, C>;
var<private> cacc30: coop_mat16x16<f32, C>;
var<private> cacc31: coop_mat16x16<f32, C>;

// f16 saturates at 65504; an activation past it is clamped rather than made infinite.
fn to_f16(v: vec4<f32>) -> vec4<f16> {
    return vec4<f16>(clamp(v, vec4<f32>(-65504.0), vec4<f32>(65504.0)));
}

// stage_x and stage_w are the same store into two arrays on purpose: one array holding both
// (and one store function) measured 1.0 ms slower at batch 256 on the H200.

// Stores A[row][4 k4 .. 4 k4 + 3] of chunk `chunk` (chunk-relative k): row-major, XS per row.
fn stage_x(chunk: u32, k4: u32, row: u32, v: vec4<f32>) {
    coop_xs[(chunk % STAGE_BUFFERS) * XS_BUFFER + row * (XS / 4u) + k4] = to_f16(v);
}

// Stores B[4 k4 .. 4 k4 + 3][col] of chunk `chunk`: column-major (a column's K contiguous), XS per
// column.
fn stage_w(chunk: u32, k4: u32, col: u32, v: vec4<f32>) {
    coop_ws[(chunk % STAGE_BUFFERS) * WS_BUFFER + col * (XS / 4u) + k4] = to_f16(v);
}

// stage_w for operands already in f16 (clamped and rounded like to_f16 when they were made).
fn stage_w16(chunk: u32, k4: u32, col: u32, v: vec4<f16>) {
    coop_ws[(chunk % STAGE_BUFFERS) * WS_BUFFER + col * (XS / 4u) + k4] = v;
}

fn clear_acc() {
    cacc00 = coop_mat16x16<f32, C>();
    cacc01 = coop_mat16x16<f32, C>();
    cacc10 = coop_mat16x16<f32, C>();
    cacc11 = coop_mat16x16<f32, C>();
    cacc20 = coop_mat16x16<f32, C>();
    cacc21 = coop_mat16x16<f32, C>();
    cacc30 = coop_mat16x16<f32, C>();
    cacc31 = coop_mat16x16<f32, C>();
}

// First tile row and column of the block of the subgroup that thread (tx, ty) is in.
fn sg_origin(tx: u32, ty: u32) -> vec2<u32> {
    let sg = (16u * ty + tx) / 32u;
    let across = BN / 32u;
    return vec2<u32>((sg / across) * 16u * SG_TR, (sg % across) * 32u);
}

fn mma_chunk(chunk: u32, tx: u32, ty: u32) {
    let o = sg_origin(tx, ty);
    let xb = (chunk % STAGE_BUFFERS) * XS_BUFFER;
    let wb = (chunk % STAGE_BUFFERS) * WS_BUFFER;
    for (var kk = 0u; kk < BK; kk += 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&coop_xs[xb + (o.x * XS + kk) / 4u], XS / 4u);
        let b0 = coopLoad<coop_mat16x16<f16, B>>(&coop_ws[wb + (o.y * XS + kk) / 4u], XS / 4u);
        let b1 = coopLoad<coop_mat16x16<f16, B>>(&coop_ws[wb + ((o.y + 16u) * XS + kk) / 4u], XS / 4u);
        cacc00 = coopMultiplyAdd(a0, b0, cacc00);
        cacc01 = coopMultiplyAdd(a0, b1, cacc01);
        if (SG_TR >= 2u) {
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&coop_xs[xb + ((o.x + 16u) * XS + kk) / 4u], XS / 4u);
            cacc10 = coopMultiplyAdd(a1, b0, cacc10);
            cacc11 = coopMultiplyAdd(a1, b1, cacc11);
        }
        if (SG_TR == 4u) {
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&coop_xs[xb + ((o.x + 32u) * XS + kk) / 4u], XS / 4u);
            cacc20 = coopMultiplyAdd(a2, b0, cacc20);
            cacc21 = coopMultiplyAdd(a2, b1, cacc21);
            let a3 = coopLoadT<coop_mat16x16<f16, A>>(&coop_xs[xb + ((o.x + 48u) * XS + kk) / 4u], XS / 4u);
            cacc30 = coopMultiplyAdd(a3, b0, cacc30);
            cacc31 = coopMultiplyAdd(a3, b1, cacc31);
        }
    }
}

// Called after mma_chunk(c). With two buffers, chunk c + 2, the next to reuse chunk c's buffer,
// is staged only after the barrier that follows chunk c + 1's staging, which every thread
// reaches after multiplying chunk c. With one, chunk c + 1 overwrites it: every subgroup must
// be done with it first.
fn release_chunk() {
    if (STAGE_BUFFERS == 1u) {
        workgroupBarrier();
    }
}

// Stores part `part` of the sums to coop_cs: every subgroup's 16-row band `part`, at stage row
// 16 × (the subgroup's row band). Every thread calls it for each part in turn after the K loop
// (in uniform control flow), before that part's acc_at.
fn flush_acc(tx: u32, ty: u32, part: u32) {
    let o = sg_origin(tx, ty);
    let at = (o.x / (16u * SG_TR)) * 16u * BN + o.y;
    if (part > 0u) {
        // Every thread has read the previous part.
        workgroupBarrier();
    }
    if (part == 0u) {
        coopStoreT(cacc00, &coop_cs[at], BN);
        coopStoreT(cacc01, &coop_cs[at + 16u], BN);
    } else if (part == 1u) {
        coopStoreT(cacc10, &coop_cs[at], BN);
        coopStoreT(cacc11, &coop_cs[at + 16u], BN);
    } else if (part == 2u) {
        coopStoreT(cacc20, &coop_cs[at], BN);
        coopStoreT(cacc21, &coop_cs[at + 16u], BN);
    } else {
        coopStoreT(cacc30, &coop_cs[at], BN);
        coopStoreT(cacc31, &coop_cs[at + 16u], BN);
    }
    workgroupBarrier();
}

// The row of coop_cs holding this thread's block row `q` (0 .. TM - 1; part q / (TM / CS_PARTS)).
fn stage_row(ty: u32, q: u32) -> u32 {
    let per = TM / CS_PARTS;
    return per * ty + q % per;
}

// Tile-relative row of this thread's block row `q`: stage row r of part p is row r % 16 of the
// part's band of the subgroups of row band r / 16.
fn block_row(ty: u32, q: u32) -> u32 {
    let r = stage_row(ty, q);
    return (r / 16u) * 16u * SG_TR + 16u * (q / (TM / CS_PARTS)) + r % 16u;
}

// Tile-relative first column of this thread's column band `j` (0 .. TN/4 - 1).
fn block_col(tx: u32, j: u32) -> u32 {
    return j * 64u + 4u * tx;
}

// The four sums of block row `q`, column band `j`, after flush_acc of its part.
fn acc_at(tx: u32, ty: u32, q: u32, j: u32) -> vec4<f32> {
    let i = stage_row(ty, q) * BN + block_col(tx, j);
    return vec4<f32>(coop_cs[i], coop_cs[i + 1u], coop_cs[i + 2u], coop_cs[i + 3u]);
}

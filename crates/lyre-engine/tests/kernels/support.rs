use half::{bf16, f16};
use lyre_engine::gpu::{run_now, Dispatch, RowCounts};
use lyre_engine::KvFormat;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "../common/gpu.rs"]
mod gpu;
pub use gpu::Gpu;

impl Gpu {
    pub fn run(&self, counts: RowCounts, dispatches: &[Dispatch]) {
        run_now(&self.ctx, &self.counts, &counts, dispatches).expect("GPU run");
    }
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn randn(rng: &mut StdRng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| (rng.random::<f32>() * 2.0 - 1.0) * scale).collect()
}

/// Rounds to bf16 and returns (values as f32, packed bits).
pub fn bf16_round(v: &[f32]) -> (Vec<f32>, Vec<u16>) {
    let bits: Vec<u16> = v.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
    let vals = bits.iter().map(|&b| bf16::from_bits(b).to_f32()).collect();
    (vals, bits)
}

/// A zeroed KV-cache buffer of `n` values in `format`.
pub fn kv_buffer(gpu: &Gpu, n: usize, format: KvFormat) -> wgpu::Buffer {
    match format {
        KvFormat::F32 => gpu.buf(&vec![0f32; n]),
        KvFormat::F16 => gpu.buf(&vec![0u16; n.next_multiple_of(2)]),
    }
}

/// A KV-cache buffer's values as f32.
pub fn read_kv(gpu: &Gpu, b: &wgpu::Buffer, format: KvFormat) -> Vec<f32> {
    match format {
        KvFormat::F32 => gpu.read::<f32>(b),
        KvFormat::F16 => gpu.read::<u16>(b).into_iter().map(|h| f16::from_bits(h).to_f32()).collect(),
    }
}

/// `v` as the cache stores it.
pub fn kv_round(v: &[f32], format: KvFormat) -> Vec<f32> {
    match format {
        KvFormat::F32 => v.to_vec(),
        KvFormat::F16 => v.iter().map(|&x| f16::from_f32(x).to_f32()).collect(),
    }
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    let d = max_abs_diff(got, want);
    assert!(d <= tol, "{what}: max|Δ| = {d:e} > {tol:e}");
    assert!(got.iter().all(|x| x.is_finite()), "{what}: non-finite output");
}

/// The mat-vec variants the kernel tests cover: every split of K over a column's subgroups.
pub fn matvec_kernels(size: u32) -> Vec<lyre_engine::kernels::select::MatmulKernel> {
    [1, 2, 4, 8].map(|split| lyre_engine::kernels::select::MatmulKernel::Matvec { size, split }).to_vec()
}

/// The few-rows variants the kernel tests cover: every row-quad count, split and column count.
pub fn few_rows_kernels() -> Vec<lyre_engine::kernels::select::MatmulKernel> {
    use lyre_engine::kernels::select::MatmulKernel::FewRows;
    [(1, 1, 1), (2, 2, 2), (4, 8, 1), (8, 1, 2), (8, 4, 1)]
        .map(|(quads, split, cpt)| FewRows { quads, split, cpt })
        .to_vec()
}

/// The GEMM variants the kernel tests cover: every tile, without a split, with an even split
/// and with one that leaves the last workgroup fewer chunks of K.
pub fn gemm_kernels() -> Vec<lyre_engine::kernels::select::MatmulKernel> {
    use lyre_engine::kernels::gemm_tile::GemmTile;
    use lyre_engine::kernels::select::MatmulKernel::Gemm;
    vec![
        Gemm { tile: GemmTile::ROWS_16, split: 1 },
        Gemm { tile: GemmTile::ROWS_32, split: 2 },
        Gemm { tile: GemmTile::ROWS_64, split: 3 },
        Gemm { tile: GemmTile::ROWS_16, split: 4 },
        Gemm { tile: GemmTile::ROWS_128, split: 2 },
        Gemm { tile: GemmTile::ROWS_128_WIDE, split: 1 },
        // The cooperative tiles' load order, on registers.
        Gemm { tile: GemmTile::ROWS_64.with_contiguous_loads(), split: 3 },
        Gemm { tile: GemmTile::ROWS_128.with_contiguous_loads(), split: 1 },
    ]
}

/// The GEMM variants on cooperative matrices (f16 operands, f32 sums) where the adapter has them
/// (none on lavapipe; see [`Gpu::coop_or_required`]).
pub fn coop_kernels(gpu: &Gpu) -> Vec<lyre_engine::kernels::select::MatmulKernel> {
    use lyre_engine::kernels::gemm_tile::GemmTile;
    use lyre_engine::kernels::select::MatmulKernel::Gemm;
    if !gpu.coop_or_required() {
        return Vec::new();
    }
    let on = |t: GemmTile| t.on_coop().expect("a tile with a cooperative form");
    vec![
        Gemm { tile: on(GemmTile::ROWS_16), split: 1 },
        Gemm { tile: on(GemmTile::ROWS_32), split: 2 },
        Gemm { tile: on(GemmTile::ROWS_64), split: 3 },
        Gemm { tile: GemmTile::COOP_WIDE, split: 1 },
        Gemm { tile: GemmTile::COOP_WIDE, split: 2 },
        Gemm { tile: GemmTile::COOP_TALL, split: 1 },
        Gemm { tile: GemmTile::COOP_TALL, split: 2 },
        Gemm { tile: GemmTile::COOP_WIDE_K64, split: 1 },
        Gemm { tile: GemmTile::COOP_WIDE_K64, split: 2 },
        Gemm { tile: GemmTile::COOP_SHORT, split: 1 },
        Gemm { tile: GemmTile::COOP_SHORT, split: 2 },
    ]
}

/// Whether `kernel` is a GEMM whose tile takes K in chunks of 64 (K must be a multiple of 64).
pub fn chunks_of_64(kernel: lyre_engine::kernels::select::MatmulKernel) -> bool {
    matches!(kernel, lyre_engine::kernels::select::MatmulKernel::Gemm { tile, .. } if tile.bk == 64)
}

/// Whether `kernel` runs on cooperative matrices (its operands rounded to f16).
pub fn is_coop(kernel: lyre_engine::kernels::select::MatmulKernel) -> bool {
    matches!(kernel, lyre_engine::kernels::select::MatmulKernel::Gemm { tile, .. } if tile.coop)
}

// The order in which the GEMM kernels' threads load a chunk of x (prepended after
// gemm_tile.wgsl or coop_tile.wgsl, whose CONTIGUOUS_LOADS picks it): load q of thread t is of
// tile row x_row(t, q), chunk-relative vec4 x_k4(t, q), X_LOADS loads per thread.
//
// With CONTIGUOUS_LOADS, BK / 4 neighbouring threads read one row's chunk, so that a subgroup's
// load covers whole rows (two rows of 256 bytes in f32 chunks of 64), and a thread's loads are
// of X_LOADS rows at the same k. Otherwise pairs of threads read 32 contiguous bytes of a row (a
// subgroup's load touches 16 rows), and all of a thread's loads are of one row.

fn x_row(t: u32, q: u32) -> u32 {
    if (CONTIGUOUS_LOADS) {
        return (t + q * THREADS) / (BK / 4u);
    }
    return (t / 2u) % BM;
}

fn x_k4(t: u32, q: u32) -> u32 {
    if (CONTIGUOUS_LOADS) {
        return t % (BK / 4u);
    }
    return 2u * ((t + q * THREADS) / (2u * BM)) + t % 2u;
}

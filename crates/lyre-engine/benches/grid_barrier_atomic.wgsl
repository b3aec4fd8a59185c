// grid_barrier.wgsl's exchange buffer with atomic loads and stores (which go to L2 on NVIDIA).
@group(0) @binding(1) var<storage, read_write> published: array<atomic<u32>>;

fn load_published(i: u32) -> u32 {
    return atomicLoad(&published[i]);
}

fn store_published(i: u32, v: u32) {
    atomicStore(&published[i], v);
}

// grid_barrier.wgsl's exchange buffer with plain loads and stores.
@group(0) @binding(1) var<storage, read_write> published: array<u32>;

fn load_published(i: u32) -> u32 {
    return published[i];
}

fn store_published(i: u32, v: u32) {
    published[i] = v;
}

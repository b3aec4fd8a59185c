// Whether a grid of `groups` workgroups of 256 threads is resident at once, which the
// persistent kernels' grid barriers need (decode_layer.wgsl): every workgroup arrives at one
// counter and waits, a bounded number of polls, for all the others. A workgroup that gave up
// counts itself in state[1]; a resident grid leaves it 0. Each workgroup holds WORDS u32 of
// workgroup memory, as much as the kernel it stands for, since that limits how many fit on a
// multiprocessor.

override WORDS: u32 = 1u;

struct Params {
    groups: u32,
    spin_limit: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// [0]: arrivals, [1]: workgroups that gave up waiting.
@group(0) @binding(1) var<storage, read_write> state: array<atomic<u32>>;

var<workgroup> held: array<u32, WORDS>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
    for (var i = t; i < WORDS; i += 256u) {
        held[i] = i;
    }
    workgroupBarrier();
    // Never true: keeps the array.
    if (held[WORDS - 1u] != WORDS - 1u) {
        atomicAdd(&state[2], 1u);
    }
    if (t == 0u) {
        atomicAdd(&state[0], 1u);
        // Whether all arrived is checked after the wait, not assumed from how it ended: lavapipe
        // ends any loop after 65535 iterations (llvmpipe's loop limiter).
        for (var spins = 0u; spins < p.spin_limit && atomicLoad(&state[0]) < p.groups; spins++) {
        }
        if (atomicLoad(&state[0]) < p.groups) {
            atomicAdd(&state[1], 1u);
        }
    }
}

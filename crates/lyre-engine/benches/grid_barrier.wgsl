// The probe of benches/grid_barrier.rs (prepended with grid_barrier_plain.wgsl or
// grid_barrier_atomic.wgsl: how the exchange buffer is read and written): PHASES phases in which
// every workgroup streams its slice of `data` (VEC4S vec4<u32> per workgroup; the slice moves
// every phase so that L2 does not hold it) and publishes VALUES values per phase (together an
// activation vector), then reads every workgroup's values of the previous phase and checks them.
// Between phases, either a new dispatch (PERSISTENT = 0: one phase per dispatch,
// the phase taken from a ticket counter) or a grid-wide barrier on an atomic counter (PERSISTENT =
// 1: every phase in one dispatch; needs every workgroup resident at once). Stale reads count in
// `stats[0]`, barrier waits that gave up in `stats[1]` (a bounded spin, so a grid that is not
// resident fails the check instead of hanging).

override PERSISTENT: u32 = 0u;
override PHASES: u32 = 1u;
override GROUPS: u32 = 1u;
override VEC4S: u32 = 0u;
override REGIONS: u32 = 1u;
override VALUES: u32 = 1u;

const THREADS: u32 = 256u;
const SPIN_LIMIT: u32 = 1048576u;

@group(0) @binding(0) var<storage, read> data: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, 4>; // ticket, arrivals
@group(0) @binding(3) var<storage, read_write> stats: array<atomic<u32>, 2>;
@group(0) @binding(4) var<storage, read_write> sink: array<u32>;

var<workgroup> wg_phase: u32;
var<workgroup> wg_sum: array<u32, THREADS>;

fn stream_slice(phase: u32, g: u32, li: u32) -> u32 {
    let base = ((phase % REGIONS) * GROUPS + g) * VEC4S;
    var acc = 0u;
    for (var i = li; i < VEC4S; i += THREADS) {
        let v = data[base + i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    return acc;
}

// Every value of phase `phase - 1` must be `phase`.
fn check_previous(phase: u32, li: u32) {
    if (phase == 0u) {
        return;
    }
    var stale = 0u;
    let n = GROUPS * VALUES;
    for (var j = li; j < n; j += THREADS) {
        stale += u32(load_published((phase - 1u) * n + j) != phase);
    }
    if (stale != 0u) {
        atomicAdd(&stats[0], stale);
    }
}

fn publish(phase: u32, g: u32, li: u32, acc: u32) {
    wg_sum[li] = acc;
    workgroupBarrier();
    if (li == 0u) {
        var x = 0u;
        for (var i = 0u; i < THREADS; i++) {
            x ^= wg_sum[i];
        }
        // Never true for the bench's data: keeps the loads.
        if (x == 0xdeadbeefu) {
            sink[g] = x;
        }
    }
    for (var j = li; j < VALUES; j += THREADS) {
        store_published((phase * GROUPS + g) * VALUES + j, phase + 1u);
    }
}

fn grid_barrier(phase: u32, li: u32) {
    storageBarrier();
    if (li == 0u) {
        atomicAdd(&counters[1], 1u);
        let arrivals = (phase + 1u) * GROUPS;
        var spins = 0u;
        while (atomicLoad(&counters[1]) < arrivals) {
            spins++;
            if (spins == SPIN_LIMIT) {
                atomicAdd(&stats[1], 1u);
                break;
            }
        }
    }
    storageBarrier();
}

@compute @workgroup_size(THREADS)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let g = wid.x;
    if (PERSISTENT == 0u) {
        if (li == 0u) {
            wg_phase = atomicAdd(&counters[0], 1u) / GROUPS;
        }
        let phase = workgroupUniformLoad(&wg_phase);
        check_previous(phase, li);
        publish(phase, g, li, stream_slice(phase, g, li));
        return;
    }
    for (var phase = 0u; phase < PHASES; phase++) {
        check_previous(phase, li);
        publish(phase, g, li, stream_slice(phase, g, li));
        grid_barrier(phase, li);
    }
}

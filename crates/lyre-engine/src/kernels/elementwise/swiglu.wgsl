// act[r, i] = silu(gate_up[r, i]) * gate_up[r, inter + i]; gate_up rows hold [gate | up].

struct Params {
    inter: u32,
    rows_index: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read> gate_up: array<f32>;
@group(0) @binding(3) var<storage, read_write> act: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let r = gid.y;
    if (i >= p.inter || r >= counts[p.rows_index]) {
        return;
    }
    let g = gate_up[r * 2u * p.inter + i];
    let u = gate_up[r * 2u * p.inter + p.inter + i];
    act[r * p.inter + i] = g / (1.0 + exp(min(-g, 80.0))) * u;
}

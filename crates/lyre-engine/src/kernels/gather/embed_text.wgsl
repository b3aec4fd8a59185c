// out[r] = text_embedding[rows[r].text] (bf16 → f32). The table may be split into up to eight
// buffers of `rows_per_chunk` rows each, because one binding is limited in size.
// Rows without text (text == NONE) get zeros; the combine step ignores them.

struct Params {
    dim: u32,
    rows_per_chunk: u32,
    vocab: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read> t0: array<u32>;
@group(0) @binding(3) var<storage, read> t1: array<u32>;
@group(0) @binding(4) var<storage, read> t2: array<u32>;
@group(0) @binding(5) var<storage, read> t3: array<u32>;
@group(0) @binding(6) var<storage, read> t4: array<u32>;
@group(0) @binding(7) var<storage, read> t5: array<u32>;
@group(0) @binding(8) var<storage, read> t6: array<u32>;
@group(0) @binding(9) var<storage, read> t7: array<u32>;
@group(0) @binding(10) var<storage, read_write> out: array<f32>;

fn word(chunk: u32, i: u32) -> u32 {
    switch chunk {
        case 0u: { return t0[i]; }
        case 1u: { return t1[i]; }
        case 2u: { return t2[i]; }
        case 3u: { return t3[i]; }
        case 4u: { return t4[i]; }
        case 5u: { return t5[i]; }
        case 6u: { return t6[i]; }
        default: { return t7[i]; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let pair = gid.x;
    let r = gid.y;
    if (2u * pair >= p.dim) {
        return;
    }
    let id = rows[r].text;
    var lo = 0.0;
    var hi = 0.0;
    if (id < p.vocab) {
        let chunk = id / p.rows_per_chunk;
        let local = id % p.rows_per_chunk;
        let w = word(chunk, local * (p.dim / 2u) + pair);
        lo = bitcast<f32>(w << 16u);
        hi = bitcast<f32>(w & 0xffff0000u);
    }
    out[r * p.dim + 2u * pair] = lo;
    out[r * p.dim + 2u * pair + 1u] = hi;
}

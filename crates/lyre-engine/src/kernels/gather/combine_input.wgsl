// The talker's input rows: x[r] = text-channel part + codec-channel part, where
//   text part  = tp[r] (the projected text embedding) unless rows[r].text == NONE;
//   codec part = nothing (NONE), codec_embedding[id], the session's accumulated frame
//                embedding acc[slot] (FROM_ACC), or an uploaded vector extra[k] (EXTRA | k).

const NONE: u32 = 0xffffffffu;
const FROM_ACC: u32 = 0xfffffffeu;
const EXTRA: u32 = 0x80000000u;

struct Params {
    dim: u32,
    vocab: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> rows: array<Row>;
@group(0) @binding(2) var<storage, read> tp: array<f32>;
@group(0) @binding(3) var<storage, read> codec_emb: array<u32>;
@group(0) @binding(4) var<storage, read> acc: array<f32>;
@group(0) @binding(5) var<storage, read> extra: array<f32>;
@group(0) @binding(6) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x;
    let r = gid.y;
    if (d >= p.dim) {
        return;
    }
    let row = rows[r];
    var v = 0.0;
    if (row.text != NONE) {
        v = tp[r * p.dim + d];
    }
    if (row.codec == FROM_ACC) {
        v += acc[row.slot * p.dim + d];
    } else if (row.codec != NONE && (row.codec & EXTRA) != 0u) {
        v += extra[(row.codec & ~EXTRA) * p.dim + d];
    } else if (row.codec < p.vocab) {
        let i = row.codec * p.dim + d;
        let w = codec_emb[i / 2u];
        if (i % 2u == 0u) {
            v += bitcast<f32>(w << 16u);
        } else {
            v += bitcast<f32>(w & 0xffff0000u);
        }
    }
    x[r * p.dim + d] = v;
}

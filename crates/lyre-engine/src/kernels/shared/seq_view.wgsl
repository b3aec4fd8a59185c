// Sequence views, shared by the codec-decoder kernels (prepended to each kernel's source).
//
// A view says where row `t` of session `s` lives in a buffer of f32 rows of `stride` elements:
// * dense (kind 0): `[session][len][stride]`, the step's own rows, `t` in [0, len);
// * ring (kind 1): `[slot][len][stride]`, one ring per state slot; the session's absolute row
//   `frame * spf + t` lives at row `(frame * spf + t) mod len` of its slot, so a negative `t`
//   reads history that earlier steps wrote.
// Sessions are the engine's `SessionDesc` rows (32 u32: slot at 0, frame index at 2).

struct View {
    kind: u32,
    stride: u32,
    len: u32,
    spf: u32,
}

@group(0) @binding(1) var<storage, read> counts: array<u32>;
@group(0) @binding(2) var<storage, read> sessions: array<u32>;

const SESSION_WORDS: u32 = 32u;
const SESSIONS_COUNT: u32 = 1u;

fn n_sessions() -> u32 {
    return counts[SESSIONS_COUNT];
}

fn session_slot(s: u32) -> u32 {
    return sessions[s * SESSION_WORDS];
}

fn session_frame(s: u32) -> u32 {
    return sessions[s * SESSION_WORDS + 2u];
}

// Element offset of the first channel of row `t` of session `s`.
fn row_offset(v: View, s: u32, t: i32) -> u32 {
    if (v.kind == 0u) {
        return (s * v.len + u32(t)) * v.stride;
    }
    let len = i32(v.len);
    let abs_row = i32(session_frame(s) * v.spf) + t;
    let r = ((abs_row % len) + len) % len;
    return (session_slot(s) * v.len + u32(r)) * v.stride;
}

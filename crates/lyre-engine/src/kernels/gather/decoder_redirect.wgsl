// Sends the codec decoder's step of a session whose segment has ended to a scratch slot, so the
// end-of-speech frame (and a frame already submitted after it) never enter the slot's streaming
// state, and the session's next segment continues the audio from its last real frame. A session
// ends when its first code is EOS; `ended[slot]` remembers it until the engine clears it at the
// slot's next prompt.

struct Params {
    eos: u32,
    dump_slot: u32,
    // u32 words per `SessionDesc`.
    session_words: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> counts: array<u32>;
// The decoder's `SessionDesc` rows (`session_words` u32 each, slot first).
@group(0) @binding(2) var<storage, read_write> sessions: array<u32>;
// `[session][16]` codes of this tick.
@group(0) @binding(3) var<storage, read> codes: array<u32>;
@group(0) @binding(4) var<storage, read_write> ended: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = gid.x;
    if (s >= counts[1]) {
        return;
    }
    let slot = sessions[s * p.session_words];
    if (ended[slot] != 0u || codes[s * 16u] == p.eos) {
        ended[slot] = 1u;
        sessions[s * p.session_words] = p.dump_slot;
    }
}

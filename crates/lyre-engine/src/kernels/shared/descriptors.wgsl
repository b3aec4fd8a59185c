// Descriptors every tick uploads, shared by the engine's kernels (prepended to their source).

// One talker (or code-predictor) input row: its KV-cache slot and position, its text token
// (0xffffffff: none) and its codec part (an id, 0xffffffff none, 0xfffffffe the session's frame
// sum, 0x80000000 | k an uploaded vector).
struct Row {
    slot: u32,
    pos: u32,
    text: u32,
    codec: u32,
}

// One session of the tick (mirrors `sampling::SessionDesc`).
struct Session {
    slot: u32,
    last_row: u32,
    gen_index: u32,
    flags: u32,
    seed_lo: u32,
    seed_hi: u32,
    top_k: u32,
    sub_top_k: u32,
    temperature: f32,
    top_p: f32,
    rep_penalty: f32,
    sub_temperature: f32,
    sub_top_p: f32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
    // With FLAG_FORCED: this frame's codes, chosen instead of the sampler's (teacher forcing).
    forced: array<u32, 16>,
}

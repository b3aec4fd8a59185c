// Chooses one code per session from a row of logits, with the official processors and order:
//   talker (TALKER mode): repetition penalty over the session's earlier first-codebook codes,
//     EOS masked for the first `min_new_tokens` frames (always with FLAG_IGNORE_EOS), ids [suppress_start, vocab) except EOS
//     suppressed;
//   then greedy argmax (first index on ties), or temperature → top-k → top-p → a draw from a
//   counter-based RNG keyed by (seed, frame, code column), so a session's draws do not depend on
//   which other sessions share the tick.
// One 256-thread workgroup per session; the row lives in workgroup memory.

struct Params {
    vocab: u32,
    logits_stride: u32,
    logits_first: u32,
    logits_step: u32,
    code_col: u32,
    talker_mode: u32,
    eos: u32,
    suppress_start: u32,
    min_new_tokens: u32,
    history_words: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sessions: array<Session>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read_write> codes: array<u32>;
@group(0) @binding(4) var<storage, read_write> history: array<u32>;

const WG: u32 = 256u;
const MAX_V: u32 = 4096u;
const PER: u32 = 16u; // MAX_V / WG: thread t owns elements [t * PER, t * PER + PER)
const NEG: f32 = -1.0e30;
const FLAG_TALKER_SAMPLE: u32 = 1u;
const FLAG_CP_SAMPLE: u32 = 2u;
const FLAG_IGNORE_EOS: u32 = 4u;
const FLAG_FORCED: u32 = 8u;

var<workgroup> s: array<f32, MAX_V>;

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Float → u32 with the same order (for the threshold searches).
fn key(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}

// The code session `i` takes: the drawn one, or its forced code (teacher forcing).
fn chosen(i: u32, drawn: u32) -> u32 {
    if ((sessions[i].flags & FLAG_FORCED) != 0u) {
        return sessions[i].forced[p.code_col];
    }
    return drawn;
}

// The logit of id `c` after the talker's processors (repetition penalty, EOS and suppression).
fn processed_logit(c: u32, row: u32, hist: u32, sess: Session, talker: bool) -> f32 {
    var v = logits[row + c];
    if (talker) {
        let seen = (history[hist + c / 32u] >> (c % 32u)) & 1u;
        if (seen != 0u && sess.rep_penalty != 1.0) {
            if (v < 0.0) {
                v = v * sess.rep_penalty;
            } else {
                v = v / sess.rep_penalty;
            }
        }
        let eos_masked = sess.gen_index < p.min_new_tokens || (sess.flags & FLAG_IGNORE_EOS) != 0u;
        if (c == p.eos && eos_masked) {
            v = NEG;
        }
        if (c >= p.suppress_start && c != p.eos) {
            v = NEG;
        }
    }
    return v;
}

struct Settings {
    sample: u32,
    temperature: f32,
    top_k: u32,
    top_p: f32,
}

var<workgroup> u_settings: Settings;

// Sampling settings come from a storage read; pass them through workgroup memory so the
// branches that contain barriers are uniform. The load is also the barrier after the row load.
fn settings(t: u32, talker: bool, sess: Session) -> Settings {
    if (t == 0u) {
        if (talker) {
            u_settings = Settings(sess.flags & FLAG_TALKER_SAMPLE, sess.temperature, sess.top_k, sess.top_p);
        } else {
            u_settings = Settings(sess.flags & FLAG_CP_SAMPLE, sess.sub_temperature, sess.sub_top_k, sess.sub_top_p);
        }
    }
    return workgroupUniformLoad(&u_settings);
}

// Where the draw lands in [0, total): the counter-based RNG keyed by (seed, frame, code column).
fn draw_goal(sess: Session, total: f32) -> f32 {
    let r = pcg(sess.seed_lo ^ pcg(sess.seed_hi ^ pcg(sess.gen_index ^ pcg(p.code_col + 0x9e3779b9u))));
    return f32(r >> 8u) * (1.0 / 16777216.0) * total;
}

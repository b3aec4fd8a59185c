//! Long-form text: cutting a text too long for one utterance into segments that each fit a
//! session's KV cache, and the per-segment seeds and frame limits.
//!
//! A session speaks its segments one after another in the same KV-cache slot, each as its own
//! prompt from position zero with the same voice, instruct and sampling, while the codec
//! decoder carries on, so the audio is one continuous stream (see the engine's session docs).

pub mod boundary;
mod split;

pub use split::{rollover_cut, split};

use crate::checkpoint::tokenizer::TextTokenizer;

/// Frames of speech per text token that a segment leaves room for: about twice what slow
/// speech needs (speech runs at 3–4 frames per token in every language the model speaks).
pub const FRAMES_PER_TOKEN_ALLOWANCE: usize = 8;

/// No segment budget is smaller than this many tokens.
pub const MIN_SEGMENT_TOKENS: usize = 4;

/// The default most text tokens in one segment for a KV-cache slot of `max_positions`, when
/// `overhead` positions go to the prompt's fixed part (role, speaker, language, instruct, a
/// cloned voice's reference): the segment's tokens, the prompt's closing rows and its speech at
/// [`FRAMES_PER_TOKEN_ALLOWANCE`] frames per token all fit.
pub fn default_segment_tokens(max_positions: usize, overhead: usize) -> usize {
    (max_positions.saturating_sub(overhead + 2) / (1 + FRAMES_PER_TOKEN_ALLOWANCE)).max(MIN_SEGMENT_TOKENS)
}

/// The sampling seed of segment `index` of a request seeded with `seed`: the request's own seed
/// for the first segment (a short text sounds as it always did), then SplitMix64 of the seed
/// and the index, so every segment can be reproduced alone.
pub fn segment_seed(seed: u64, index: u32) -> u64 {
    if index == 0 {
        return seed;
    }
    let mut z = seed.wrapping_add((index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E9B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Text tokens of `text` alone (a segment's size).
pub fn token_count(tok: &TextTokenizer, text: &str) -> usize {
    tok.encode_with_special(text).map_or(text.len(), |ids| ids.len())
}

/// The segments a whole text is spoken in: [`split`] by text tokens, each trimmed of the
/// spaces at its ends; segments of nothing but spaces are dropped.
pub fn split_text(tok: &TextTokenizer, text: &str, budget_tokens: usize) -> Vec<String> {
    let ranges = split(text, budget_tokens, &mut |s| token_count(tok, s));
    ranges.into_iter().map(|r| text[r].trim()).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_per_segment_and_keep_the_first() {
        assert_eq!(segment_seed(42, 0), 42);
        let seeds: std::collections::HashSet<u64> = (0..1000).map(|i| segment_seed(42, i)).collect();
        assert_eq!(seeds.len(), 1000);
        assert_ne!(segment_seed(42, 1), segment_seed(43, 1));
    }

    #[test]
    fn the_default_budget_leaves_room_for_slow_speech() {
        let n = default_segment_tokens(4096, 10);
        assert!(n * (1 + FRAMES_PER_TOKEN_ALLOWANCE) + 12 <= 4096 && n >= 400, "{n}");
        assert_eq!(default_segment_tokens(16, 40), MIN_SEGMENT_TOKENS);
    }
}

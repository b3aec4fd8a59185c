//! Long-form text: cutting a text too long for one utterance into segments that each fit a
//! session's KV cache, and the per-segment seeds and frame limits.
//!
//! A session speaks its segments one after another in the same KV-cache slot, each as its own
//! prompt from position zero with the same voice, instruct and sampling, while the codec
//! decoder carries on, so the audio is one continuous stream (see the engine's session docs).

pub mod boundary;
mod split;

pub use split::{rollover_cut, split};

use std::collections::HashMap;
use std::ops::Range;

use unicode_normalization::{is_nfc_quick, IsNormalized};

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

/// Whether `text` has at most `most` text tokens ([`token_count`]); a short text is not
/// tokenized.
pub fn fits_tokens(tok: &TextTokenizer, text: &str, most: usize) -> bool {
    surely_fits(text, most) || token_count(tok, text) <= most
}

/// Whether `text`, and so any piece of it, has at most `most` tokens by its length alone: the
/// tokenizer's NFC normaliser leaves a text already in NFC unchanged (a piece of it too), and
/// byte-level BPE gives every token at least one byte.
fn surely_fits(text: &str, most: usize) -> bool {
    text.len() <= most && is_nfc_quick(text.chars()) == IsNormalized::Yes
}

/// Pieces of a text up to this long (a word, a character of a script without spaces) are
/// tokenized once however often they recur in it.
const MEMO_BYTES: usize = 32;

/// The segments a whole text is spoken in: [`split`] by text tokens, each trimmed of the
/// spaces at its ends; segments of nothing but spaces are dropped.
pub fn split_text(tok: &TextTokenizer, text: &str, budget_tokens: usize) -> Vec<String> {
    // No sum of its pieces' tokens can exceed the budget: `split` would give the whole text.
    if surely_fits(text, budget_tokens) {
        return trimmed(text, std::iter::once(0..text.len()));
    }
    // A sentence too long for a segment is cut at its words, and words recur; longer pieces
    // seldom do.
    let mut counts: HashMap<String, usize> = HashMap::new();
    let ranges = split(text, budget_tokens, &mut |s| match counts.get(s) {
        Some(&n) => n,
        None if s.len() <= MEMO_BYTES => *counts.entry(s.to_owned()).or_insert(token_count(tok, s)),
        None => token_count(tok, s),
    });
    trimmed(text, ranges)
}

/// `text` in consecutive pieces of at most `max_bytes` (at least 8), each ending just after a
/// whitespace character where one falls in its second half, else at a character boundary (a
/// long run with no space). Their concatenation is `text`.
pub fn pieces_after_spaces(text: &str, max_bytes: usize) -> Vec<&str> {
    let max_bytes = max_bytes.max(8);
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max_bytes {
        let mut end = max_bytes;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let cut = rest[..end]
            .char_indices()
            .rev()
            .take_while(|&(i, _)| i >= max_bytes / 2)
            .find(|(_, c)| c.is_whitespace())
            .map_or(end, |(i, c)| i + c.len_utf8());
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The pieces of `text` at `ranges`, each trimmed of the spaces at its ends; pieces of nothing
/// but spaces are dropped.
fn trimmed(text: &str, ranges: impl IntoIterator<Item = Range<usize>>) -> Vec<String> {
    ranges.into_iter().map(|r| text[r].trim()).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::tokenizer::tests::tokenizer;

    #[test]
    fn pieces_end_after_spaces_and_rejoin_exactly() {
        let sentence = "Die Straße nach Zürich ist lang — 長い道のり. ";
        for text in [
            sentence.repeat(300),
            "x".repeat(5000),
            "é".repeat(3001),
            format!("{} {}", "a".repeat(3000), "b"),
        ] {
            let pieces = pieces_after_spaces(&text, 2048);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= 2048), "{}", pieces.len());
        }
        let text = sentence.repeat(300);
        let pieces = pieces_after_spaces(&text, 2048);
        assert!(pieces[..pieces.len() - 1].iter().all(|p| p.ends_with(char::is_whitespace)));
        assert_eq!(pieces_after_spaces("short", 2048), ["short"]);
        assert!(pieces_after_spaces("", 2048).is_empty());
    }

    /// [`split_text`] measuring every piece, however short the text.
    pub(super) fn measured_split_text(tok: &TextTokenizer, text: &str, budget: usize) -> Vec<String> {
        trimmed(text, split(text, budget, &mut |s| token_count(tok, s)))
    }

    #[test]
    fn short_texts_are_cut_as_measured() {
        let tok = tokenizer();
        let texts = [
            "Hello there.",
            "  Hello there. How are you today? I am fine, thanks.  ",
            "我们走吧，天黑了。明天再来。",
            "Café au lait, s'il vous plaît. Grüße aus Köln!",
            "東京 Tokyo 2024年 — Привет, мир! नमस्ते दुनिया। 😀👍🏽",
            "e\u{301}tude \u{212B}ngstr\u{f6}m \u{958}",
            "line one\nline two\n\n",
            // A token per byte: digits are tokens of their own.
            "1234567890",
            "3.14159, 2.71828; 1.41421",
            "",
        ];
        for text in texts {
            let near = text.len().saturating_sub(3)..=text.len() + 1;
            for budget in [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233].into_iter().chain(near) {
                let expected = measured_split_text(tok, text, budget);
                assert_eq!(split_text(tok, text, budget), expected, "{text:?} in {budget}");
                assert_eq!(fits_tokens(tok, text, budget), token_count(tok, text) <= budget, "{text:?}");
            }
        }
        let long = texts[..5].concat().repeat(8);
        for budget in [10, 40, 300, long.len()] {
            assert_eq!(split_text(tok, &long, budget), measured_split_text(tok, &long, budget), "{budget}");
        }
    }

    #[test]
    fn a_text_in_nfc_has_no_more_tokens_than_bytes() {
        let tok = tokenizer();
        for text in ["a", " ", "\n\n", "don't", "😀👍🏽", "한국어", "ﷺ", "ﷺ'll"] {
            assert!(surely_fits(text, text.len()), "{text:?} is in NFC");
            assert!(token_count(tok, text) <= text.len(), "{text:?}");
        }
        assert!(!surely_fits("e\u{301}", 3), "not in NFC");
        assert!(!surely_fits("\u{212B}", 3), "not in NFC");
    }

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

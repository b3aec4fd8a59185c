//! The splitter over random texts in many scripts: it keeps every character, never cuts a word
//! of a script that separates words with spaces, and keeps every segment within the budget; and
//! a text is cut by its tokens as if every piece of it were tokenized.

use proptest::prelude::*;

use super::boundary::is_word_char;
use super::tests::measured_split_text;
use super::{split, split_text};
use crate::checkpoint::tokenizer::tests::tokenizer;

/// Letters of scripts with spaces between words, and of scripts without.
const SPACED: &[(u32, u32)] = &[
    (0x61, 0x7A),     // Latin
    (0xE0, 0xFC),     // Latin with accents
    (0x430, 0x44F),   // Cyrillic
    (0x3B1, 0x3C9),   // Greek
    (0x627, 0x64A),   // Arabic
    (0x915, 0x939),   // Devanagari consonants
    (0xAC00, 0xAC80), // Hangul syllables
    (0xE01, 0xE2E),   // Thai (no spaces in real text; here its "words" are spaced)
    (0x30, 0x39),     // digits
];
const UNSPACED: &[(u32, u32)] = &[(0x4E00, 0x4FFF), (0x3041, 0x3096), (0x30A1, 0x30FA)];
const SEPARATORS: &[&str] = &[
    " ", " ", " ", ", ", ". ", "! ", "? ", "; ", ": ", "\n", " — ", "。", "，", "！", "？", "；", "、", "। ",
    "؟ ", "\u{3000}", "...", "\" ", "」",
];

fn letter(ranges: &'static [(u32, u32)]) -> impl Strategy<Value = char> {
    prop::sample::select(ranges).prop_flat_map(|(a, b)| (a..=b).prop_filter_map("a char", char::from_u32))
}

/// A word of 1–8 letters of one spaced script (Devanagari letters may carry a vowel sign,
/// which stays with them), or a run of 1–30 unspaced characters, then a separator.
fn item() -> impl Strategy<Value = String> {
    let spaced =
        prop::sample::select(SPACED).prop_flat_map(|(a, b)| {
            prop::collection::vec((a..=b).prop_filter_map("a char", char::from_u32), 1..=8).prop_map(|cs| {
                cs.into_iter()
                    .map(|c| {
                        if ('\u{915}'..='\u{939}').contains(&c) {
                            format!("{c}\u{93E}")
                        } else {
                            c.to_string()
                        }
                    })
                    .collect::<String>()
            })
        });
    let unspaced = prop::collection::vec(letter(UNSPACED), 1..=30).prop_map(|cs| cs.into_iter().collect());
    let word = prop_oneof![3 => spaced, 1 => unspaced];
    (word, prop::sample::select(SEPARATORS)).prop_map(|(w, sep): (String, &str)| w + sep)
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(item(), 0..120).prop_map(|items| items.concat())
}

/// A text of a few items, some of them not in NFC (the tokenizer normalises them), some of as
/// many tokens as bytes (every digit is a token).
fn short_text() -> impl Strategy<Value = String> {
    let unnormalised =
        prop::sample::select(&["e\u{301} ", "\u{212B} ", "\u{958}\u{93E} ", "\u{1100}\u{1161} "][..]);
    let item = prop_oneof![
        6 => item(),
        1 => unnormalised.prop_map(str::to_owned),
        2 => "[0-9]{1,12}[ ,.]",
    ];
    prop::collection::vec(item, 0..12).prop_map(|items| items.concat())
}

/// A [`short_text`] and a budget, often near its length in bytes.
fn short_text_and_budget() -> impl Strategy<Value = (String, usize)> {
    short_text().prop_flat_map(|text| {
        let n = text.len();
        (Just(text), prop_oneof![0..160usize, n.saturating_sub(8)..n + 8])
    })
}

fn graphemes(s: &str) -> usize {
    unicode_segmentation::UnicodeSegmentation::graphemes(s, true).count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn keeps_every_character_and_never_cuts_a_word(text in text(), budget in 8usize..200) {
        let ranges = split(&text, budget, &mut graphemes);
        prop_assert_eq!(ranges.is_empty(), text.is_empty());
        let mut at = 0;
        for r in &ranges {
            prop_assert_eq!(r.start, at, "segments follow each other");
            prop_assert!(r.end > r.start, "no empty segment");
            let segment = &text[r.clone()];
            prop_assert!(graphemes(segment) <= budget, "{} graphemes > {}: {:?}", graphemes(segment), budget, segment);
            at = r.end;
        }
        prop_assert_eq!(at, text.len(), "the segments cover the text");
        for r in ranges.iter().skip(1) {
            let before = text[..r.start].chars().last().unwrap();
            let after = text[r.start..].chars().next().unwrap();
            prop_assert!(
                !(is_word_char(before) && is_word_char(after)),
                "cut inside a word: {:?} | {:?}", &text[r.start.saturating_sub(12)..r.start], &text[r.start..]
            );
            // A vowel sign is never separated from its letter.
            prop_assert_ne!(after, '\u{93E}');
        }
    }

    #[test]
    fn text_tokens_cut_as_every_piece_measured((text, budget) in short_text_and_budget()) {
        let tok = tokenizer();
        prop_assert_eq!(split_text(tok, &text, budget), measured_split_text(tok, &text, budget));
    }

    #[test]
    fn prefers_sentence_ends(sentences in prop::collection::vec("[a-z]{1,6}( [a-z]{1,6}){0,5}\\. ", 2..20)) {
        let text = sentences.concat();
        let longest = sentences.iter().map(|s| s.chars().count()).max().unwrap();
        let ranges = split(&text, longest, &mut |s: &str| s.chars().count());
        for r in &ranges {
            prop_assert!(text[r.clone()].ends_with(". "), "{:?}", &text[r.clone()]);
        }
    }
}

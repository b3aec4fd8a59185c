//! Incremental tokenization of text that arrives in pieces while audio is being generated.
//!
//! The talker consumes one text token per frame, so a token is released as soon as no later
//! text can change it, and the concatenation of everything released is exactly the text
//! part of the whole-text prompt, `assistant_text_ids(whole)[3..len - 5]`, wherever the
//! pieces were split.
//!
//! The whole-text prompt tokenizes the segment `"assistant\n{text}"` (between
//! `<|im_start|>` and `<|im_end|>`), and its text ids are that segment's ids minus the first
//! two. The stream tokenizes the same segment, so even text starting with a line break
//! (which merges with the role's `\n`) comes out identical. Three things can still change
//! near the end of the received text, and each is held back:
//!
//! 1. **NFC.** Text is normalised only up to the last character that never combines with
//!    what precedes it (anything but a combining mark or a Hangul medial/final jamo). NFC of
//!    the concatenation equals the concatenation of NFC on either side of such a cut.
//! 2. **Pre-tokens.** Both split patterns ([`SplitRule`]) have a lookahead but no lookbehind,
//!    so matching restarts identically at any released boundary. Cut the normalised text into
//!    runs of letters, of numbers, and of everything else (whitespace, punctuation, symbols);
//!    under the case-aware pattern a combining mark joins the run of the character before it.
//!    A match starting in run *i* never examines text beyond the first character of run *i + 2*,
//!    so every pre-token starting before the second-to-last run is final; BPE works within
//!    pre-tokens, so their tokens are final. Why, alternative by alternative:
//!    * letters: at most one prefix character from run *i* (a space, punctuation, or a mark),
//!      then only letters (and, case-aware, marks) of run *i* or *i + 1*; case changes may end a
//!      pre-token inside a letter run, never after it. Qwen2's contractions (`'ll`) read at most
//!      two letters past the apostrophe.
//!    * numbers: one character.
//!    * punctuation, whitespace and line breaks (` ?[^\s\p{L}\p{N}]+[\r\n/]*`, `\s*[\r\n]+`,
//!      `\s+(?!\S)`, `\s+`): only characters of the everything-else run they start in, and the
//!      one character after it. Keeping whitespace and punctuation in one class matters: the
//!      case-aware `[\r\n/]*` runs on through any mix of line breaks and slashes.
//! 3. **Reserved tokens.** A suffix that could still grow into an added token such as
//!    `<|im_end|>` stays raw; a piece completing one is rejected (field `text`).

use std::sync::OnceLock;

use tokenizers::utils::SysRegex;
use tokenizers::NormalizedString;

use crate::checkpoint::tokenizer::{SplitRule, TextTokenizer};
use crate::error::{EngineError, Result};

/// The role part of the segment; its two tokens (`assistant`, `\n`) are not released.
const ROLE: &str = "assistant\n";
const ROLE_TOKENS: usize = 2;

/// Maximal runs of one character class: letters, numbers, everything else.
const QWEN2_CLASS_RUNS: &str = r"\p{L}+|\p{N}+|[^\p{L}\p{N}]+";
/// The same classes with each combining mark in the run of the character before it (a mark
/// with nothing before it is "everything else").
const CASE_AWARE_CLASS_RUNS: &str = r"\p{L}[\p{L}\p{M}]*|\p{N}[\p{N}\p{M}]*|[^\p{L}\p{N}]+";

/// Characters that NFC may combine with what precedes them (checked with Python's
/// `unicodedata`: every other character that combines backwards is a mark).
const NFC_JOINER: &str = r"^[\p{M}\x{1161}-\x{1175}\x{11A8}-\x{11C2}]";

/// Tokenizes text pushed piece by piece, releasing each token once it is final.
#[derive(Debug, Clone)]
pub struct TextStream {
    /// Received text not yet released, starting with what is left of [`ROLE`].
    /// `buf[..raw_from]` is NFC-normalised; `buf[raw_from..]` is still raw.
    buf: String,
    raw_from: usize,
    /// Bytes of [`ROLE`] still at the start of `buf`.
    role_left: usize,
    /// Role tokens still to be dropped from the released tokens.
    skip: usize,
    finished: bool,
}

impl Default for TextStream {
    fn default() -> Self {
        Self::new()
    }
}

impl TextStream {
    /// An empty stream.
    pub fn new() -> Self {
        TextStream {
            buf: ROLE.to_owned(),
            // A cut right after the role's `\n` is safe for NFC: it combines with nothing.
            raw_from: ROLE.len(),
            role_left: ROLE.len(),
            skip: ROLE_TOKENS,
            finished: false,
        }
    }

    /// Appends `piece` and returns the tokens that became final (possibly none).
    ///
    /// A piece that completes a reserved token (e.g. `<|im_end|>`, possibly started by
    /// earlier pieces) is rejected with `InvalidRequest { field: "text" }` and not appended.
    pub fn push(&mut self, tok: &TextTokenizer, piece: &str) -> Result<Vec<u32>> {
        if self.finished {
            return Err(EngineError::invalid("text", "text pushed after the stream was finished"));
        }
        let old_len = self.buf.len();
        self.buf.push_str(piece);
        // Only the raw tail can hold the start of a reserved token: such a start is never
        // normalised (see `normalisable_len`).
        if let Err(err) = tok.reject_reserved("text", &self.buf[self.raw_from..]) {
            self.buf.truncate(old_len);
            return Err(err);
        }
        let end = self.raw_from + self.normalisable_len(tok);
        self.normalise_to(end);
        self.release(tok, self.final_len(tok.split_rule()))
    }

    /// Marks the end of the text and returns all tokens not yet released. Calling it again
    /// returns nothing.
    pub fn finish(&mut self, tok: &TextTokenizer) -> Result<Vec<u32>> {
        if self.finished {
            return Ok(Vec::new());
        }
        self.normalise_to(self.buf.len());
        let ids = self.release(tok, self.buf.len())?;
        self.finished = true;
        Ok(ids)
    }

    /// Whether [`Self::finish`] has been called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Text received but not yet released as tokens (NFC-normalised where already safe).
    pub fn pending_text(&self) -> &str {
        &self.buf[self.role_left..]
    }

    /// How much of the raw tail can be normalised now: up to its last NFC-safe cut, and
    /// never into a suffix that could still become a reserved token.
    fn normalisable_len(&self, tok: &TextTokenizer) -> usize {
        let tail = &self.buf[self.raw_from..];
        let limit = tail.len() - tok.reserved_prefix_len(tail);
        tail.char_indices()
            .rev()
            .skip_while(|&(at, _)| at > limit)
            .find(|&(_, c)| !nfc_joiner(c))
            .map_or(0, |(at, _)| at)
    }

    fn normalise_to(&mut self, end: usize) {
        if end > self.raw_from {
            let normalised = nfc(&self.buf[self.raw_from..end]);
            self.buf.replace_range(self.raw_from..end, &normalised);
            self.raw_from += normalised.len();
        }
    }

    /// Length of the longest prefix of the normalised text made of final pre-tokens.
    fn final_len(&self, rule: SplitRule) -> usize {
        let normalised = &self.buf[..self.raw_from];
        let patterns = split_patterns(rule);
        let runs: Vec<usize> = patterns.class_runs.find_iter(normalised).map(|(start, _)| start).collect();
        let Some(unsettled) = runs.len().checked_sub(2).map(|i| runs[i]) else {
            return 0;
        };
        patterns
            .split
            .find_iter(normalised)
            .take_while(|&(start, _)| start < unsettled)
            .last()
            .map_or(0, |(_, end)| end)
    }

    /// Releases the tokens of `buf[..end]`, which must end at a final pre-token boundary.
    fn release(&mut self, tok: &TextTokenizer, end: usize) -> Result<Vec<u32>> {
        if end == 0 {
            return Ok(Vec::new());
        }
        // Tokenize all of the normalised text, not just `..end`, so the tokenizer sees the
        // same continuation after `end` that the whole text has.
        let tokens = tok.encode_with_starts(&self.buf[..self.raw_from])?;
        let mut ids: Vec<u32> =
            tokens.into_iter().take_while(|&(_, start)| start < end).map(|(id, _)| id).collect();
        let skipped = self.skip.min(ids.len());
        ids.drain(..skipped);
        self.skip -= skipped;
        self.buf.drain(..end);
        self.raw_from -= end;
        self.role_left = self.role_left.saturating_sub(end);
        Ok(ids)
    }
}

fn nfc(text: &str) -> String {
    let mut normalised = NormalizedString::from(text);
    normalised.nfc();
    normalised.get().to_owned()
}

fn nfc_joiner(c: char) -> bool {
    let mut utf8 = [0; 4];
    static JOINER: OnceLock<SysRegex> = OnceLock::new();
    let joiner = JOINER.get_or_init(|| compile(NFC_JOINER));
    !c.is_ascii() && joiner.find_iter(c.encode_utf8(&mut utf8)).next().is_some()
}

/// A split pattern and the character-class runs its hold-back rule counts.
struct SplitPatterns {
    split: SysRegex,
    class_runs: SysRegex,
}

fn split_patterns(rule: SplitRule) -> &'static SplitPatterns {
    static QWEN2: OnceLock<SplitPatterns> = OnceLock::new();
    static CASE_AWARE: OnceLock<SplitPatterns> = OnceLock::new();
    let (cell, runs) = match rule {
        SplitRule::Qwen2 => (&QWEN2, QWEN2_CLASS_RUNS),
        SplitRule::CaseAware => (&CASE_AWARE, CASE_AWARE_CLASS_RUNS),
    };
    cell.get_or_init(|| SplitPatterns { split: compile(rule.pattern()), class_runs: compile(runs) })
}

fn compile(pattern: &str) -> SysRegex {
    SysRegex::new(pattern).expect("constant regex compiles")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::tokenizer::tests::{qwen2_tokenizer, tokenizer};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const TEXTS: &[&str] = &[
        "Hello world, this is a test.",
        "Okay. Yeah.",
        "I don't know, she'll say it's fine; we've TRIED, they'RE sure.",
        "Numbers: 12345, 3.14159 and 1,000,000 (roughly) - 42%!",
        "Multiple   spaces   here,\tand\ttabs\t\tdoubled.",
        "Line one\nLine two\n\nLine four\r\nCRLF\r\r\n  indented\n",
        "   leading and trailing whitespace   ",
        "\nstarts with a newline",
        "\n\n  \n blank lines first",
        " \t\n",
        "Emoji 😀👍🏽 and 👨‍👩‍👧 family!",
        "你好，世界。今天天气很好！我们去公园吧。",
        "日本語のテキスト、カタカナとひらがな。",
        "한국어 문장입니다. 가\u{11A8} \u{1100}\u{1161}\u{11A8} end",
        "Cafe\u{301} cre\u{300}me bru\u{302}le\u{301}e, e\u{301}\u{327} x\u{323}\u{301} \u{301}alone",
        "Angstrom \u{212B} and Kelvin \u{212A}; ohm \u{2126}.",
        "Tags like <b> and <|im_ or <tts_ are plain text, as is a|>b.",
        "...!!! ??? -- «quoted» “smart” 'single' `tick`",
        "'s 't 're 've 'm 'll 'd at the start 'S 'LL",
        "",
        "a",
        "x.\n",
        "iPhone and McDonald's use JavaScript on an HTTPServer.",
        "NASA's GPT-4o met IBM's CEO; XMLHttpRequest2 aBcDeF ABCdef abcDEF.",
        "\u{1C5}emal \u{1C8}ubica \u{2B0}aspirated D\u{17D}ungla \u{141}\u{F3}d\u{17A}City",
        "สวัสดีครับ ผมชื่อสมชาย ยินดีที่ได้รู้จัก",
        "नमस्ते, आप कैसे हैं? मैं ठीक हूँ। क्षत्रिय ज्ञान",
        "வணக்கம், நீங்கள் எப்படி இருக்கிறீர்கள்?",
        "اَلسَّلَامُ عَلَيْكُمْ and שָׁלוֹם עוֹלָם",
        "Tiếng Việt: Hà Nội, ThànhPhố Hồ Chí Minh.",
        "See https://example.com/docs/API/v2/getUserID?x=1, a/b, (c)/d, C:/Users/ and //\n/",
        "Marks after anything: .\u{301}. 1\u{301}a \u{301}x \n\u{301}\n A\u{301}B\u{301}c \u{301}\u{301}",
        // Case-aware `[\r\n/]*` runs on through line breaks and slashes.
        "x| _\r\n//\u{5b8}ก and .\n/\n/\r\n/x, ;\n\n//\n y",
    ];

    /// Fragments for random texts: each is awkward at a boundary in some way.
    const FRAGMENTS: &[&str] = &[
        "Hello", "world", " ", "  ", "\n", "\r\n", "\t", " \n ", "don't", "'s", "'ll", "123", "4", ".", ",",
        "!?", "...", "-", "e", "\u{301}", "\u{327}", "\u{1100}", "\u{1161}", "\u{11A8}", "가", "你好", "。",
        "😀", "👍🏽", "\u{200d}", "<", "|", "<|im_", "_", "Å", "\u{212B}", "ſ", "Mc", "Donald", "iPhone",
        "HTTP", "Server", "A", "b", "\u{1C5}", "\u{2B0}", "ก", "\u{E31}", "\u{E35}", "น", "\u{94D}", "स",
        "ते", "\u{93C}", "/", "//", ":/", "\u{5B8}", "ש", "\u{64E}", "ا", "ế", "\r", "'re", "\n/",
    ];

    fn whole_text_ids(tok: &TextTokenizer, text: &str) -> Vec<u32> {
        let ids = tok.assistant_text_ids(text).unwrap();
        ids[3..ids.len() - 5].to_vec()
    }

    fn stream_ids(tok: &TextTokenizer, pieces: &[&str]) -> Vec<u32> {
        let mut stream = TextStream::new();
        let mut ids = Vec::new();
        for piece in pieces {
            ids.extend(stream.push(tok, piece).unwrap());
        }
        ids.extend(stream.finish(tok).unwrap());
        assert_eq!(stream.pending_text(), "");
        ids
    }

    /// Splits `text` at random char boundaries into about `1 / p` sized pieces.
    fn random_pieces<'a>(rng: &mut StdRng, text: &'a str, p: f64) -> Vec<&'a str> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for (at, _) in text.char_indices().skip(1) {
            if rng.random_bool(p) {
                pieces.push(&text[start..at]);
                start = at;
            }
        }
        pieces.push(&text[start..]);
        pieces
    }

    fn random_text(rng: &mut StdRng) -> String {
        let len = rng.random_range(1..24);
        (0..len).map(|_| FRAGMENTS[rng.random_range(0..FRAGMENTS.len())]).collect()
    }

    fn assert_streams_exactly(tok: &TextTokenizer, rng: &mut StdRng, text: &str) {
        let expected = whole_text_ids(tok, text);
        let chars: Vec<&str> = text.split_inclusive(|_| true).collect();
        assert_eq!(stream_ids(tok, &chars), expected, "{:?}: char by char: {text:?}", tok.split_rule());
        assert_eq!(stream_ids(tok, &[text]), expected, "{:?}: one piece: {text:?}", tok.split_rule());
        for p in [0.05, 0.2, 0.5, 0.8] {
            let pieces = random_pieces(rng, text, p);
            assert_eq!(stream_ids(tok, &pieces), expected, "{:?}: pieces {pieces:?}", tok.split_rule());
        }
    }

    fn both_rules() -> [&'static TextTokenizer; 2] {
        let (case_aware, qwen2) = (tokenizer(), qwen2_tokenizer());
        assert_eq!((case_aware.split_rule(), qwen2.split_rule()), (SplitRule::CaseAware, SplitRule::Qwen2));
        [case_aware, qwen2]
    }

    #[test]
    fn streamed_tokens_equal_whole_text_tokens() {
        for (seed, tok) in both_rules().into_iter().enumerate() {
            let mut rng = StdRng::seed_from_u64(0x1f2e + seed as u64);
            for text in TEXTS {
                assert_streams_exactly(tok, &mut rng, text);
            }
            let mut checked = 0;
            while checked < 300 {
                let text = random_text(&mut rng);
                if tok.find_reserved(&text).is_none() {
                    assert_streams_exactly(tok, &mut rng, &text);
                    checked += 1;
                }
            }
        }
    }

    /// The claim the release rule rests on: tokenizing from any pre-token boundary of the
    /// normalised segment gives the whole segment's tokens from that boundary on.
    #[test]
    fn tokenizing_restarts_exactly_at_pre_token_boundaries() {
        for tok in both_rules() {
            for text in TEXTS {
                restarts_exactly(tok, text);
            }
        }
    }

    fn restarts_exactly(tok: &TextTokenizer, text: &str) {
        let segment = nfc(&format!("{ROLE}{text}"));
        let whole = tok.encode_with_starts(&segment).unwrap();
        for (cut, _) in split_patterns(tok.split_rule()).split.find_iter(&segment) {
            let expected: Vec<_> =
                whole.iter().filter(|&&(_, start)| start >= cut).map(|&(id, s)| (id, s - cut)).collect();
            assert_eq!(tok.encode_with_starts(&segment[cut..]).unwrap(), expected, "{segment:?} at {cut}");
        }
    }

    #[test]
    fn releases_tokens_early() {
        let tok = tokenizer();
        let mut stream = TextStream::new();
        let released = stream.push(tok, "Hello world, this is").unwrap();
        // "Hello", " world", ",", " this"; " is" could still become " island".
        assert_eq!(released, [9707, 1879, 11, 419]);
        assert_eq!(stream.pending_text(), " is");
        assert_eq!(stream.push(tok, " a test").unwrap(), [374, 264]);
        assert_eq!(stream.pending_text(), " test");
        assert!(!stream.is_finished());
        assert_eq!(stream.finish(tok).unwrap(), [1273]);
        assert!(stream.is_finished());
        assert_eq!(stream.pending_text(), "");
        assert_eq!(stream.finish(tok).unwrap(), Vec::<u32>::new());
        let after_finish = stream.push(tok, "more");
        assert!(matches!(after_finish, Err(EngineError::InvalidRequest { field: "text", .. })));

        let mut stream = TextStream::new();
        assert_eq!(stream.push(tok, "Hi").unwrap(), Vec::<u32>::new());
        assert_eq!(stream.pending_text(), "Hi");
        assert_eq!(stream.finish(tok).unwrap(), whole_text_ids(tok, "Hi"));
    }

    #[test]
    fn combining_characters_wait_for_their_base() {
        let tok = tokenizer();
        let mut stream = TextStream::new();
        let mut ids = stream.push(tok, "one two three cafe").unwrap();
        assert!(stream.pending_text().ends_with("cafe"));
        ids.extend(stream.push(tok, "\u{301} four five six").unwrap());
        assert!(stream.pending_text().contains("six"));
        ids.extend(stream.finish(tok).unwrap());
        assert_eq!(ids, whole_text_ids(tok, "one two three caf\u{e9} four five six"));
    }

    fn expect_text_error(result: Result<Vec<u32>>) {
        let is_text_error = |message: &str| message.contains("<|im_end|>");
        match result {
            Err(EngineError::InvalidRequest { field: "text", message }) if is_text_error(&message) => {}
            other => panic!("expected a `text` error naming <|im_end|>, got {other:?}"),
        }
    }

    #[test]
    fn rejects_reserved_tokens_split_across_pieces() {
        let tok = tokenizer();
        let mut stream = TextStream::new();
        let mut ids = stream.push(tok, "Say one two <|im_").unwrap();
        assert!(stream.pending_text().ends_with("<|im_"));
        expect_text_error(stream.push(tok, "end|> now"));
        // The rejected piece was not appended; the stream goes on without it.
        ids.extend(stream.push(tok, "x|> and more words").unwrap());
        ids.extend(stream.finish(tok).unwrap());
        assert_eq!(ids, whole_text_ids(tok, "Say one two <|im_x|> and more words"));

        let mut stream = TextStream::new();
        let text = "a b c d <|im_end|>";
        let (head, last) = text.split_at(text.len() - 1);
        for c in head.chars() {
            stream.push(tok, c.encode_utf8(&mut [0; 4])).unwrap();
        }
        expect_text_error(stream.push(tok, last));
        expect_text_error(TextStream::new().push(tok, "x<|im_end|>"));
    }
}

//! Where a text may be cut, ranked from the best place to the last resort.
//!
//! Every cut lies on a character boundary and, above [`Level::Grapheme`], never between two
//! letters or digits of a script that separates its words with spaces, so a word is never cut
//! in two while any other place exists.

use unicode_segmentation::{GraphemeCursor, UnicodeSegmentation};

/// How good a place to cut is: each level also allows every cut of the levels before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// After a sentence: a full stop, question or exclamation mark (then closing quotes and
    /// brackets, then spaces), a CJK or other script's sentence mark (`。！？；।؟…`), or a line
    /// break.
    Sentence,
    /// After a clause: a comma, colon, semicolon or dash followed by a space, or a CJK clause
    /// mark (`，、：`).
    Clause,
    /// Before a word: after a run of spaces.
    Space,
    /// Between two characters that are not both letters or digits of a spaced script: next to
    /// an ideograph or kana, or next to punctuation.
    Unspaced,
    /// Between any two grapheme clusters (a run longer than a segment with no other place).
    Grapheme,
}

impl Level {
    pub fn finer(self) -> Option<Level> {
        match self {
            Level::Sentence => Some(Level::Clause),
            Level::Clause => Some(Level::Space),
            Level::Space => Some(Level::Unspaced),
            Level::Unspaced => Some(Level::Grapheme),
            Level::Grapheme => None,
        }
    }
}

/// Ends a sentence only when a space (or the end of the text) follows.
fn ends_sentence_before_space(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '‼' | '⁇' | '⁈' | '⁉' | '\u{037E}')
}

/// Ends a sentence by itself: scripts that put no space after their sentence marks.
fn ends_sentence(c: char) -> bool {
    matches!(
        c,
        '。' | '！'
            | '？'
            | '；'
            | '．'
            | '｡'
            | '।'
            | '॥'
            | '؟'
            | '۔'
            | '።'
            | '፧'
            | '။'
            | '܀'
            | '։'
    )
}

/// Ends a clause when a space follows.
fn ends_clause_before_space(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '—' | '–' | '،' | '؛')
}

/// Ends a clause by itself (CJK clause marks).
fn ends_clause(c: char) -> bool {
    matches!(c, '，' | '、' | '：' | '､')
}

/// Closing quotes and brackets that stay with the sentence or clause they close.
fn closes(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | '”'
            | '’'
            | '»'
            | '›'
            | ')'
            | ']'
            | '}'
            | '」'
            | '』'
            | '）'
            | '】'
            | '〕'
            | '〉'
            | '》'
            | '〗'
            | '］'
            | '｝'
    )
}

fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Scripts written without spaces between words, where a cut between two characters splits
/// no word: Han ideographs, kana, Bopomofo, and CJK symbols.
pub fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // CJK radicals, Kangxi radicals
        | 0x3000..=0x303F    // CJK symbols and punctuation
        | 0x3040..=0x31FF    // Hiragana, Katakana, Bopomofo, Kanbun, Katakana extensions
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0xFF00..=0xFFEF    // Halfwidth and fullwidth forms
        | 0x20000..=0x3134F  // CJK Extensions B–G
    )
}

/// A letter or digit of a script that separates its words with spaces. (Combining marks
/// stay with their letter: cuts above [`Level::Grapheme`] fall between grapheme clusters.)
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_unspaced(c)
}

/// Byte offsets strictly inside `text` where it may be cut at `level` (or a better level), in
/// increasing order. Offsets are character (and, above `Grapheme`, grapheme) boundaries.
pub fn cuts(text: &str, level: Level) -> Vec<usize> {
    let mut out = Vec::new();
    if level >= Level::Unspaced {
        let graphemes: Vec<(usize, &str)> = text.grapheme_indices(true).collect();
        for pair in graphemes.windows(2) {
            let (_, before) = pair[0];
            let (at, after) = pair[1];
            let last = before.chars().last().expect("graphemes are not empty");
            let first = after.chars().next().expect("graphemes are not empty");
            if level == Level::Grapheme || !(is_word_char(last) && is_word_char(first)) {
                out.push(at);
            }
        }
        return out;
    }
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (_, c) = chars[i];
        let kind = mark_kind(c, level);
        if kind == Mark::None {
            i += 1;
            continue;
        }
        // The mark, more marks of the same rank, closing quotes and brackets.
        let mut j = i + 1;
        while j < chars.len() && (mark_kind(chars[j].1, level) != Mark::None || closes(chars[j].1)) {
            j += 1;
        }
        let spaces_from = j;
        while j < chars.len() && chars[j].1.is_whitespace() {
            j += 1;
        }
        let spaced = j > spaces_from;
        let ok = match kind {
            Mark::Alone => true,
            Mark::BeforeSpace => spaced,
            Mark::None => false,
        };
        if ok && j < chars.len() && is_grapheme_boundary(text, chars[j].0) {
            out.push(chars[j].0);
        }
        i = j.max(i + 1);
    }
    out
}

fn is_grapheme_boundary(text: &str, at: usize) -> bool {
    GraphemeCursor::new(at, text.len(), true).is_boundary(text, 0).unwrap_or(false)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    None,
    /// Ends its sentence or clause by itself.
    Alone,
    /// Ends it only when a space follows.
    BeforeSpace,
}

/// What `c` is at `level` (a sentence mark also ends a clause, a line break ends everything).
fn mark_kind(c: char, level: Level) -> Mark {
    if is_line_break(c) || ends_sentence(c) {
        return Mark::Alone;
    }
    if ends_sentence_before_space(c) {
        return Mark::BeforeSpace;
    }
    if level >= Level::Clause {
        if ends_clause(c) {
            return Mark::Alone;
        }
        if ends_clause_before_space(c) {
            return Mark::BeforeSpace;
        }
    }
    if level >= Level::Space && c.is_whitespace() {
        return Mark::Alone;
    }
    Mark::None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, level: Level) -> Vec<&str> {
        let mut out = Vec::new();
        let mut from = 0;
        for at in cuts(text, level) {
            out.push(&text[from..at]);
            from = at;
        }
        out.push(&text[from..]);
        out
    }

    #[test]
    fn sentences_end_after_their_marks_quotes_and_spaces() {
        assert_eq!(
            pieces("He said \"Stop!\" Then left. Pi is 3.14, roughly... Really?!  Yes", Level::Sentence),
            ["He said \"Stop!\" ", "Then left. ", "Pi is 3.14, roughly... ", "Really?!  ", "Yes"]
        );
        assert_eq!(
            pieces("你好。我很好！你呢？好；走", Level::Sentence),
            ["你好。", "我很好！", "你呢？", "好；", "走"]
        );
        assert_eq!(
            pieces("line one\nline two\n\nthree", Level::Sentence),
            ["line one\n", "line two\n\n", "three"]
        );
        assert_eq!(pieces("नमस्ते। आप कैसे हैं", Level::Sentence), ["नमस्ते। ", "आप कैसे हैं"]);
        assert_eq!(pieces("Ends here.", Level::Sentence), ["Ends here."]);
    }

    #[test]
    fn clauses_and_spaces_refine_sentences() {
        assert_eq!(pieces("one, two; three: four", Level::Clause), ["one, ", "two; ", "three: ", "four"]);
        assert_eq!(pieces("1,000 and a,b", Level::Clause), ["1,000 and a,b"]);
        assert_eq!(pieces("我们，你们、他们", Level::Clause), ["我们，", "你们、", "他们"]);
        assert_eq!(pieces("the  quick brown", Level::Space), ["the  ", "quick ", "brown"]);
    }

    #[test]
    fn unspaced_cuts_never_split_a_spaced_word() {
        assert_eq!(pieces("我爱Rust语言", Level::Unspaced), ["我", "爱", "Rust", "语", "言"]);
        // Thai has no spaces between words: only the last resort cuts it.
        assert_eq!(pieces("สวัสดี", Level::Unspaced), ["สวัสดี"]);
        assert_eq!(pieces("สวัสดี", Level::Grapheme).concat(), "สวัสดี");
        // A combining accent stays with its letter even at the last resort.
        assert_eq!(pieces("e\u{301}a", Level::Grapheme), ["e\u{301}", "a"]);
    }
}

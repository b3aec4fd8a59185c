//! Cutting a text into segments of at most `budget` units (text tokens, in the engine) at the
//! best places [`cuts`] offers: whole sentences packed together, a sentence too long for one
//! segment cut at its clauses, a clause at its spaces, and only a run with none of those (a long
//! stretch of CJK without punctuation, a "word" longer than a segment) between characters.

use std::ops::Range;

use super::boundary::{cuts, Level};

/// Splits `text` into consecutive byte ranges that together cover it exactly (every character
/// is kept, in order), each of at most `budget` units as `measure` counts them (summed over
/// the pieces a segment is packed from) unless a single grapheme cluster is larger. An empty
/// text gives no ranges.
pub fn split(text: &str, budget: usize, measure: &mut dyn FnMut(&str) -> usize) -> Vec<Range<usize>> {
    let mut packer = Packer { text, budget: budget.max(1), measure, out: Vec::new(), start: 0, size: 0 };
    packer.pack(0..text.len(), Level::Sentence, None);
    if packer.start < text.len() {
        packer.out.push(packer.start..text.len());
    }
    packer.out
}

struct Packer<'a, 'm> {
    text: &'a str,
    budget: usize,
    measure: &'m mut dyn FnMut(&str) -> usize,
    out: Vec<Range<usize>>,
    /// Where the segment being filled starts, and its size so far.
    start: usize,
    size: usize,
}

impl Packer<'_, '_> {
    /// Packs `range` cut at `level`; `measured` is the range's size when known already (a level
    /// with no cut in the range gives it whole).
    fn pack(&mut self, range: Range<usize>, level: Level, measured: Option<usize>) {
        let text = self.text;
        let mut from = range.start;
        let ends = cuts(&text[range.clone()], level).into_iter().map(|at| range.start + at);
        for to in ends.chain(std::iter::once(range.end)) {
            let unit = from..to;
            from = to;
            let size = match measured {
                Some(n) if unit == range => n,
                _ => (self.measure)(&text[unit.clone()]),
            };
            if size > self.budget {
                if let Some(finer) = level.finer() {
                    self.pack(unit, finer, Some(size));
                    continue;
                }
            }
            if self.size > 0 && self.size + size > self.budget {
                self.out.push(self.start..unit.start);
                self.start = unit.start;
                self.size = 0;
            }
            self.size += size;
        }
    }
}

/// More bytes than any text token spans: a piece longer than this many bytes per token of room
/// left cannot fit, so only its head is searched for a cut.
const MAX_TOKEN_BYTES: usize = 64;

/// The least of a long piece looked at for a place to cut.
const HEAD_BYTES: usize = 16 << 10;

/// Where to end an utterance whose text is streaming in, within the next `piece`: `used` units
/// are already in the utterance, `context` is the text just before `piece` (so a sentence mark
/// at the end of the last piece is seen). `None` keeps the whole piece in this utterance.
///
/// From half the budget on, the utterance ends at the first sentence end; past the budget, at
/// the best place that keeps it within budget (or just past the first word when none does).
/// A cut at 0 ends the utterance before `piece`, when the boundary falls exactly there.
/// `measure` runs a few times on prefixes of at most `MAX_TOKEN_BYTES` per unit of room, so a
/// long piece costs little more than a short one.
pub fn rollover_cut(
    context: &str,
    piece: &str,
    used: usize,
    budget: usize,
    measure: &mut dyn FnMut(&str) -> usize,
) -> Option<usize> {
    let window = budget.saturating_sub(used).saturating_mul(MAX_TOKEN_BYTES);
    // Only the piece's head is looked at: a cut is needed within it, or just past one word.
    let mut head = window.max(HEAD_BYTES).min(piece.len());
    while !piece.is_char_boundary(head) {
        head += 1;
    }
    let joined = format!("{context}{}", &piece[..head]);
    let in_piece = |level: Level| -> Vec<usize> {
        cuts(&joined, level)
            .into_iter()
            .filter(|&at| at >= context.len())
            .map(|at| at - context.len())
            .collect()
    };
    // A cut at 0 needs text on both sides in this utterance and the next.
    let usable = |at: &usize| (*at > 0 || used > 0) && *at < piece.len();
    if used >= budget / 2 {
        if let Some(at) = in_piece(Level::Sentence).into_iter().find(usable) {
            return Some(at);
        }
    }
    if piece.len() <= window && used + measure(piece) <= budget {
        return None;
    }
    // The last cut of `level` that keeps the utterance within budget (binary search: a longer
    // prefix never measures less).
    let fitting = |level: Level, measure: &mut dyn FnMut(&str) -> usize| {
        let candidates: Vec<usize> =
            in_piece(level).into_iter().filter(usable).filter(|&at| at <= window).collect();
        let n = candidates.partition_point(|&at| used + measure(&piece[..at]) <= budget);
        n.checked_sub(1).map(|i| candidates[i])
    };
    for level in [Level::Sentence, Level::Clause, Level::Space, Level::Unspaced] {
        if let Some(at) = fitting(level, measure) {
            return Some(at);
        }
    }
    // Nothing fits: end the utterance as early as a word allows, and only inside a run with no
    // place between words at all, as late as fits.
    [Level::Space, Level::Unspaced]
        .into_iter()
        .find_map(|l| in_piece(l).into_iter().find(usable))
        .or_else(|| fitting(Level::Grapheme, measure).filter(|&at| at > 0))
        .or_else(|| in_piece(Level::Grapheme).into_iter().find(|&at| at > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    fn segments(text: &str, budget: usize) -> Vec<&str> {
        split(text, budget, &mut chars).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn sentences_are_packed_whole_while_they_fit() {
        let text = "One two. Three four. Five six seven. Eight.";
        assert_eq!(segments(text, 22), ["One two. Three four. ", "Five six seven. Eight."]);
        assert_eq!(segments(text, 21), ["One two. Three four. ", "Five six seven. ", "Eight."]);
        assert_eq!(segments(text, 100), [text]);
        assert!(segments("", 10).is_empty());
    }

    #[test]
    fn a_long_sentence_is_cut_at_clauses_then_spaces() {
        let text = "alpha beta, gamma delta epsilon, zeta. Eta.";
        assert_eq!(segments(text, 12), ["alpha beta, ", "gamma delta ", "epsilon, ", "zeta. Eta."]);
        assert_eq!(segments("我们走吧，天黑了。", 5), ["我们走吧，", "天黑了。"]);
        assert_eq!(segments("一二三四五六七", 3), ["一二三", "四五六", "七"]);
    }

    #[test]
    fn a_piece_is_measured_once_however_many_levels_find_no_cut_in_it() {
        let mut measured = Vec::new();
        let ranges = split("abcdefgh ijk", 4, &mut |s| {
            measured.push(s.to_owned());
            chars(s)
        });
        assert_eq!(ranges, [0..4, 4..8, 8..12]);
        assert_eq!(measured.iter().filter(|s| *s == "abcdefgh ijk").count(), 1, "{measured:?}");
        assert_eq!(measured.iter().filter(|s| *s == "abcdefgh ").count(), 1, "{measured:?}");
    }

    #[test]
    fn rollover_waits_for_a_sentence_end_after_half_the_budget() {
        let m = &mut chars;
        assert_eq!(rollover_cut("", "Hello there. More", 2, 20, m), None);
        assert_eq!(rollover_cut("", "Hello there. More", 10, 20, m), Some(13));
        // The sentence mark ended the last piece; the space that confirms it opens this one.
        assert_eq!(rollover_cut("said so.", " Next one", 10, 20, m), Some(1));
        assert_eq!(rollover_cut("said so", " next one", 10, 20, m), None);
    }

    #[test]
    fn rollover_past_the_budget_cuts_at_the_best_place_that_fits() {
        let m = &mut chars;
        assert_eq!(rollover_cut("", "aaa, bbb ccc ddd", 10, 16, m), Some(5));
        assert_eq!(rollover_cut("x ", "aaaa bbbb", 16, 16, m), Some(0));
        assert_eq!(rollover_cut("x", "aaaa bbbb", 16, 16, m), Some(5));
        // One long word: only the last resort fits.
        assert_eq!(rollover_cut("", "aaaa", 0, 2, m), Some(2));
        // A long piece is cut within its head, at its last sentence end that fits.
        let long = "One two three. ".repeat(10_000);
        let mut calls = 0;
        let at = rollover_cut("", &long, 0, 100, &mut |s| {
            calls += 1;
            s.chars().count()
        });
        assert_eq!(at, Some(90));
        assert!(calls < 40, "{calls} measurements");
    }
}

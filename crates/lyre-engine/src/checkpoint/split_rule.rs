//! Which pre-tokenizer split pattern a checkpoint's text tokenizer uses, decided as the official
//! loader decides it.
//!
//! The official `qwen-tts` wrapper loads its processor with `fix_mistral_regex=True`. In
//! transformers 4.57.3 (`PreTrainedTokenizerBase._patch_mistral_regex`) that replaces the Qwen2
//! split pattern of a fast tokenizer whose base vocabulary exceeds 100 000 entries, loaded from a
//! local directory, by a case-aware pattern, unless the directory's `config.json` shows the
//! tokenizer needs no fix:
//!
//! * no `config.json`: no fix;
//! * `transformers_version` ≤ 4.57.2 and a `model_type` that is not a Mistral family
//!   (`mistral`, `mistral3`, `voxtral`, `ministral`, `pixtral`): no fix;
//! * `transformers_version` ≥ 5.0.0: no fix;
//! * anything else (no version, 4.57.3 up to 5.0 pre-releases, or an old version with a Mistral or
//!   missing `model_type`): the case-aware pattern.
//!
//! The published Qwen3-TTS checkpoints say 4.57.3, so they get the case-aware pattern. (Loaded by
//! Hub id instead of a directory, transformers asks the Hub whether the repository is based on a
//! Mistral model and keeps the Qwen2 pattern when it is not; Lyre always loads a directory.)

use std::cmp::Ordering;
use std::path::Path;

use crate::error::{EngineError, Result};

/// The Qwen2 split pattern (used with `Isolated` behaviour).
pub const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The case-aware pattern transformers 4.57.3 substitutes: a word is cut where a lower-case letter
/// meets an upper-case one (`Mc|Donald`, `i|Phone`), an upper-case run stays with the lower-case
/// run after it (`HTTPServer`), combining marks belong to letter runs, and `/` may end a
/// punctuation run. There are no contraction alternatives.
pub const CASE_AWARE_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The base vocabulary size above which transformers considers the fix.
const MIN_VOCAB_FOR_FIX: usize = 100_000;
const MISTRAL_MODEL_TYPES: [&str; 5] = ["mistral", "mistral3", "voxtral", "ministral", "pixtral"];

/// The pre-tokenizer's split pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitRule {
    Qwen2,
    CaseAware,
}

impl SplitRule {
    pub fn pattern(self) -> &'static str {
        match self {
            SplitRule::Qwen2 => QWEN2_PATTERN,
            SplitRule::CaseAware => CASE_AWARE_PATTERN,
        }
    }

    /// The rule for a tokenizer of `vocab_size` base entries in checkpoint directory `dir`
    /// (reads `dir/config.json` if there is one). A `transformers_version` that is not a valid
    /// version fails, as it fails the official loader.
    pub fn for_checkpoint(dir: &Path, vocab_size: usize) -> Result<Self> {
        let path = dir.join("config.json");
        let config = match std::fs::read_to_string(&path) {
            Ok(text) => Some(
                serde_json::from_str::<serde_json::Value>(&text)
                    .map_err(|e| EngineError::Json { path: path.clone(), message: e.to_string() })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(EngineError::io(&path, e)),
        };
        let field = |name: &str| config.as_ref().and_then(|c| c.get(name)).and_then(|v| v.as_str());
        Self::decide(vocab_size, config.is_some(), field("transformers_version"), field("model_type"))
            .map_err(|message| EngineError::Config { path, field: "transformers_version".into(), message })
    }

    /// The decision itself; `Err` holds the message for an invalid version.
    fn decide(
        vocab_size: usize,
        has_config: bool,
        version: Option<&str>,
        model_type: Option<&str>,
    ) -> std::result::Result<Self, String> {
        if vocab_size <= MIN_VOCAB_FOR_FIX || !has_config {
            return Ok(SplitRule::Qwen2);
        }
        if let Some(version) = version {
            let v =
                Version::parse(version).ok_or_else(|| format!("`{version}` is not a version (PEP 440)"))?;
            if v.cmp_release(&[4, 57, 2]) != Ordering::Greater {
                let mistral = model_type.is_none_or(|t| MISTRAL_MODEL_TYPES.contains(&t));
                if !mistral {
                    return Ok(SplitRule::Qwen2);
                }
            } else if v.cmp_release(&[5, 0, 0]) != Ordering::Less {
                return Ok(SplitRule::Qwen2);
            }
        }
        Ok(SplitRule::CaseAware)
    }
}

/// A PEP 440 version, as far as comparing it with a final release needs: the release numbers,
/// and whether a suffix puts it before the release (`dev`, `a`, `b`, `rc`) or after it (`post`,
/// a local `+label`).
#[derive(Debug, PartialEq, Eq)]
struct Version {
    epoch: u64,
    release: Vec<u64>,
    suffix: Ordering,
}

impl Version {
    fn parse(text: &str) -> Option<Self> {
        let s = text.trim().to_ascii_lowercase();
        let s = s.strip_prefix('v').unwrap_or(&s);
        let (epoch, s) = match s.split_once('!') {
            Some((e, rest)) => (e.parse().ok()?, rest),
            None => (0, s),
        };
        let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (numbers, rest) = s.split_at(end);
        // A trailing dot belongs to a suffix such as `.dev0`.
        let (numbers, rest) = match numbers.strip_suffix('.') {
            Some(n) => (n, &s[end - 1..]),
            None => (numbers, rest),
        };
        let release = numbers.split('.').map(|n| n.parse().ok()).collect::<Option<Vec<u64>>>()?;
        let suffix = Self::suffix_order(rest)?;
        Some(Version { epoch, release, suffix })
    }

    /// Where a suffix puts the version relative to its release.
    fn suffix_order(rest: &str) -> Option<Ordering> {
        if rest.is_empty() {
            return Some(Ordering::Equal);
        }
        if rest.starts_with('+') {
            return Some(Ordering::Greater);
        }
        let tag = rest.trim_start_matches(['.', '-', '_']);
        let word_end = tag.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(tag.len());
        let (word, tail) = tag.split_at(word_end);
        let tail_ok = tail.trim_start_matches(['.', '-', '_']);
        let tail_ok = tail_ok.is_empty()
            || tail_ok.split(['.', '-', '_', '+']).all(|p| p.chars().all(|c| c.is_ascii_alphanumeric()));
        if !tail_ok {
            return None;
        }
        match word {
            "dev" | "a" | "alpha" | "b" | "beta" | "c" | "rc" | "pre" | "preview" => Some(Ordering::Less),
            "post" | "rev" | "r" => Some(Ordering::Greater),
            // `1.0-1` is an implicit post-release.
            "" if rest.starts_with('-') && tail.chars().next().is_some_and(|c| c.is_ascii_digit()) => {
                Some(Ordering::Greater)
            }
            _ => None,
        }
    }

    /// This version compared with the final release `other` (epoch 0).
    fn cmp_release(&self, other: &[u64]) -> Ordering {
        if self.epoch > 0 {
            return Ordering::Greater;
        }
        let len = self.release.len().max(other.len());
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        (0..len).map(|i| at(&self.release, i).cmp(&at(other, i))).find(|o| o.is_ne()).unwrap_or(self.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_pep_440() {
        let cmp = |v: &str| Version::parse(v).unwrap().cmp_release(&[4, 57, 2]);
        assert_eq!(cmp("4.57.2"), Ordering::Equal);
        assert_eq!(cmp("4.57.2.0"), Ordering::Equal);
        assert_eq!(cmp("v4.57.2"), Ordering::Equal);
        assert_eq!(cmp("4.57.1"), Ordering::Less);
        assert_eq!(cmp("4.57"), Ordering::Less);
        assert_eq!(cmp("4.57.3"), Ordering::Greater);
        assert_eq!(cmp("4.57.2.dev0"), Ordering::Less);
        assert_eq!(cmp("4.57.2rc1"), Ordering::Less);
        assert_eq!(cmp("4.57.2-alpha.1"), Ordering::Less);
        assert_eq!(cmp("4.57.2.post1"), Ordering::Greater);
        assert_eq!(cmp("4.57.2-1"), Ordering::Greater);
        assert_eq!(cmp("4.57.2+local.7"), Ordering::Greater);
        assert_eq!(cmp("1!1.0"), Ordering::Greater);
        assert_eq!(cmp("10.0.0"), Ordering::Greater);
        for bad in ["", "four", "4.57.x", "4..57", "4.57.2 beta", "4.57.2.foo"] {
            assert_eq!(Version::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn decides_as_transformers_4_57_3() {
        use SplitRule::*;
        let big = 151_643;
        let d = |version, model_type| SplitRule::decide(big, true, version, model_type).unwrap();
        assert_eq!(d(Some("4.57.3"), Some("qwen3_tts")), CaseAware);
        assert_eq!(d(Some("4.57.2"), Some("qwen3_tts")), Qwen2);
        assert_eq!(d(Some("4.51.0"), Some("qwen2")), Qwen2);
        assert_eq!(d(Some("4.57.1"), Some("mistral")), CaseAware);
        assert_eq!(d(Some("4.57.1"), None), CaseAware);
        assert_eq!(d(Some("4.58.0.dev0"), Some("qwen3_tts")), CaseAware);
        assert_eq!(d(Some("5.0.0rc1"), Some("qwen3_tts")), CaseAware);
        assert_eq!(d(Some("5.0.0"), Some("qwen3_tts")), Qwen2);
        assert_eq!(d(None, Some("qwen3_tts")), CaseAware);
        assert_eq!(SplitRule::decide(big, false, None, None), Ok(Qwen2), "no config.json");
        assert_eq!(SplitRule::decide(50_000, true, Some("4.57.3"), None), Ok(Qwen2), "small vocabulary");
        assert!(SplitRule::decide(big, true, Some("latest"), None).is_err());
    }
}

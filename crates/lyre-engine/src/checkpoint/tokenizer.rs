//! The Qwen2 byte-level BPE text tokenizer.
//!
//! Qwen3-TTS checkpoints ship `vocab.json`, `merges.txt` and `tokenizer_config.json` but no
//! `tokenizer.json`, so the tokenizer is assembled here the way Hugging Face's
//! `Qwen2TokenizerFast` converts the slow files: byte-level BPE (no unk, no dropout), NFC,
//! a split regex followed by a regex-free ByteLevel pre-tokenizer, a ByteLevel decoder, and the
//! added tokens of `added_tokens_decoder` (never normalised). The split regex is the Qwen2
//! pattern or the case-aware one, chosen from the checkpoint's `config.json` as the official
//! loader chooses it ([`SplitRule`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use tokenizers::models::bpe::{Merges, Vocab, BPE};
use tokenizers::normalizers::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

pub use super::split_rule::SplitRule;
use crate::error::{EngineError, Result};

const ASSISTANT_TURN: &str = "<|im_start|>assistant\n";
const USER_TURN: &str = "<|im_start|>user\n";
const END_TURN: &str = "<|im_end|>\n";

/// Qwen2 text tokenizer plus the chat-template helpers Qwen3-TTS prompts need.
pub struct TextTokenizer {
    inner: Tokenizer,
    /// Content of every added token (special or not), in id order. Users may not type them.
    reserved: Vec<String>,
    split_rule: SplitRule,
    /// The ids of `<|im_start|>assistant\n`.
    role_ids: [u32; 3],
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let vocab_size = self.inner.get_vocab_size(true);
        f.debug_struct("TextTokenizer")
            .field("vocab_size", &vocab_size)
            .field("split_rule", &self.split_rule)
            .finish_non_exhaustive()
    }
}

/// One entry of `tokenizer_config.json`'s `added_tokens_decoder`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct AddedTokenEntry {
    content: String,
    special: bool,
    lstrip: bool,
    rstrip: bool,
    single_word: bool,
    normalized: Option<bool>,
}

#[derive(Deserialize)]
struct TokenizerConfig {
    #[serde(default)]
    added_tokens_decoder: BTreeMap<String, AddedTokenEntry>,
}

impl TextTokenizer {
    /// Loads `vocab.json`, `merges.txt` and `tokenizer_config.json` from a checkpoint
    /// directory, with the split rule its `config.json` calls for. Errors name the file that is
    /// missing or malformed.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        Self::load(dir, None)
    }

    /// [`Self::from_dir`] with the split rule given instead of decided.
    pub fn from_dir_with_rule(dir: &Path, rule: SplitRule) -> Result<Self> {
        Self::load(dir, Some(rule))
    }

    fn load(dir: &Path, rule: Option<SplitRule>) -> Result<Self> {
        let vocab = read_vocab(&dir.join("vocab.json"))?;
        let merges_path = dir.join("merges.txt");
        let merges = read_merges(&merges_path)?;
        let added = read_added_tokens(&dir.join("tokenizer_config.json"))?;

        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| EngineError::Tokenizer(format!("{}: {e}", merges_path.display())))?;
        let mut inner = Tokenizer::new(bpe);
        let split_rule = match rule {
            Some(rule) => rule,
            None => SplitRule::for_checkpoint(dir, inner.get_vocab_size(false))?,
        };
        inner.with_normalizer(Some(NFC)).map_err(tokenizer_error)?;
        inner.with_pre_tokenizer(Some(pre_tokenizer(split_rule)?));
        inner.with_decoder(Some(ByteLevel::default()));

        let reserved = added.iter().map(|(_, token)| token.content.clone()).collect();
        add_tokens(&mut inner, added, &dir.join("tokenizer_config.json"))?;
        let mut tok = TextTokenizer { inner, reserved, split_rule, role_ids: [0; 3] };
        let role = tok.assistant_text_ids("")?;
        tok.role_ids = [role[0], role[1], role[2]];
        Ok(tok)
    }

    /// The pre-tokenizer's split pattern.
    pub fn split_rule(&self) -> SplitRule {
        self.split_rule
    }

    /// The ids of `<|im_start|>assistant\n`, the role that opens a prompt's text (the first
    /// three of [`Self::assistant_text_ids`]).
    pub fn role_ids(&self) -> [u32; 3] {
        self.role_ids
    }

    /// Encodes `s`; added tokens such as `<|im_start|>` occurring in it are recognised.
    pub fn encode_with_special(&self, s: &str) -> Result<Vec<u32>> {
        let encoding = self.inner.encode(s, false).map_err(tokenizer_error)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Encodes `s` and returns each token with the byte offset in `s` where it starts.
    pub(crate) fn encode_with_starts(&self, s: &str) -> Result<Vec<(u32, usize)>> {
        let encoding = self.inner.encode(s, false).map_err(tokenizer_error)?;
        let starts = encoding.get_offsets().iter().map(|&(start, _)| start);
        Ok(encoding.get_ids().iter().copied().zip(starts).collect())
    }

    /// The added-token string (e.g. `<|im_end|>`, `<tts_pad>`) that occurs first in `text`.
    pub fn find_reserved<'a>(&'a self, text: &str) -> Option<&'a str> {
        self.reserved
            .iter()
            .filter_map(|token| text.find(token.as_str()).map(|at| (at, token)))
            .min_by_key(|&(at, token)| (at, std::cmp::Reverse(token.len())))
            .map(|(_, token)| token.as_str())
    }

    /// Length in bytes of the longest suffix of `text` that is a proper prefix of an added
    /// token, i.e. the text that could still become a reserved token when more arrives.
    pub(crate) fn reserved_prefix_len(&self, text: &str) -> usize {
        self.reserved
            .iter()
            .flat_map(|token| token.char_indices().skip(1).map(|(end, _)| &token[..end]))
            .filter(|prefix| text.ends_with(prefix))
            .map(str::len)
            .max()
            .unwrap_or(0)
    }

    /// Ids of `"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"`.
    /// Text containing an added-token string is rejected (field `text`).
    pub fn assistant_text_ids(&self, text: &str) -> Result<Vec<u32>> {
        self.reject_reserved("text", text)?;
        self.encode_with_special(&format!("{ASSISTANT_TURN}{text}{END_TURN}{ASSISTANT_TURN}"))
    }

    /// Ids of `"<|im_start|>user\n{instruct}<|im_end|>\n"` (field `instruct` in errors).
    pub fn instruct_ids(&self, instruct: &str) -> Result<Vec<u32>> {
        self.reject_reserved("instruct", instruct)?;
        self.encode_with_special(&format!("{USER_TURN}{instruct}{END_TURN}"))
    }

    /// Ids of `"<|im_start|>assistant\n{ref_text}<|im_end|>\n"` (field `ref_text`).
    pub fn ref_text_ids(&self, ref_text: &str) -> Result<Vec<u32>> {
        self.reject_reserved("ref_text", ref_text)?;
        self.encode_with_special(&format!("{ASSISTANT_TURN}{ref_text}{END_TURN}"))
    }

    /// Decodes ids back to text; special tokens are kept, so this inverts
    /// [`Self::encode_with_special`].
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(tokenizer_error)
    }

    /// Fails with `InvalidRequest { field }` if `text` contains an added-token string.
    pub(crate) fn reject_reserved(&self, field: &'static str, text: &str) -> Result<()> {
        match self.find_reserved(text) {
            Some(token) => Err(EngineError::invalid(field, format!("contains the reserved token `{token}`"))),
            None => Ok(()),
        }
    }
}

fn tokenizer_error(err: impl std::fmt::Display) -> EngineError {
    EngineError::Tokenizer(err.to_string())
}

fn pre_tokenizer(rule: SplitRule) -> Result<Sequence> {
    let split =
        Split::new(SplitPattern::Regex(rule.pattern().to_owned()), SplitDelimiterBehavior::Isolated, false)
            .map_err(tokenizer_error)?;
    let byte_level = ByteLevel::new(false, true, false);
    Ok(Sequence::new(vec![split.into(), byte_level.into()]))
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| EngineError::io(path, e))
}

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| EngineError::Json { path: path.into(), message: e.to_string() })
}

fn read_vocab(path: &Path) -> Result<Vocab> {
    parse_json(path, &read_text(path)?)
}

/// Parses `merges.txt` like the slow `Qwen2Tokenizer`: an optional `#version` first line,
/// blank lines skipped, then one whitespace-separated pair per line.
fn read_merges(path: &Path) -> Result<Merges> {
    let text = read_text(path)?;
    let mut merges = Merges::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || (index == 0 && line.starts_with("#version")) {
            continue;
        }
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), None) => merges.push((a.to_owned(), b.to_owned())),
            _ => {
                let message = format!("line {}: expected two tokens, found {line:?}", index + 1);
                return Err(EngineError::io(path, message));
            }
        }
    }
    Ok(merges)
}

/// Reads `added_tokens_decoder`, sorted by id.
fn read_added_tokens(path: &Path) -> Result<Vec<(u32, AddedTokenEntry)>> {
    let config: TokenizerConfig = parse_json(path, &read_text(path)?)?;
    let mut tokens = config
        .added_tokens_decoder
        .into_iter()
        .map(|(key, entry)| match key.parse::<u32>() {
            Ok(id) => Ok((id, entry)),
            Err(_) => Err(config_error(path, format!("key `{key}` is not a token id"))),
        })
        .collect::<Result<Vec<_>>>()?;
    tokens.sort_by_key(|&(id, _)| id);
    Ok(tokens)
}

/// Adds the tokens in id order and checks that each one received the id the config gives
/// it (the `tokenizers` crate assigns ids itself, sequentially after the BPE vocabulary).
fn add_tokens(inner: &mut Tokenizer, added: Vec<(u32, AddedTokenEntry)>, path: &Path) -> Result<()> {
    for (id, entry) in added {
        let token = AddedToken::from(entry.content.clone(), entry.special)
            .lstrip(entry.lstrip)
            .rstrip(entry.rstrip)
            .single_word(entry.single_word)
            .normalized(entry.normalized.unwrap_or(!entry.special));
        inner.add_tokens([token]).map_err(tokenizer_error)?;
        let got = inner.token_to_id(&entry.content);
        if got != Some(id) {
            let message = format!("token {:?} should have id {id}, got {got:?}", entry.content);
            return Err(config_error(path, message));
        }
    }
    Ok(())
}

fn config_error(path: &Path, message: String) -> EngineError {
    EngineError::Config { path: path.into(), field: "added_tokens_decoder".into(), message }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use safetensors::SafeTensors;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    /// `$LYRE_SHARED/fixtures` (as the tests were built with it: the engine reads no
    /// environment at run time), else the fixtures beside the workspace.
    fn fixture(name: &str) -> PathBuf {
        let shared = option_env!("LYRE_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
        shared.join("fixtures").join(name)
    }

    /// The custom-voice fixture's tokenizer, loaded once for all tests of the crate.
    pub(crate) fn tokenizer() -> &'static TextTokenizer {
        static TOKENIZER: OnceLock<TextTokenizer> = OnceLock::new();
        TOKENIZER.get_or_init(|| TextTokenizer::from_dir(&fixture("tiny-custom-voice")).unwrap())
    }

    /// The same files with the Qwen2 split pattern (what a checkpoint whose `config.json` names
    /// transformers ≤ 4.57.2 gets).
    pub(crate) fn qwen2_tokenizer() -> &'static TextTokenizer {
        static TOKENIZER: OnceLock<TextTokenizer> = OnceLock::new();
        TOKENIZER.get_or_init(|| {
            TextTokenizer::from_dir_with_rule(&fixture("tiny-custom-voice"), SplitRule::Qwen2).unwrap()
        })
    }

    fn base_tokenizer() -> &'static TextTokenizer {
        static TOKENIZER: OnceLock<TextTokenizer> = OnceLock::new();
        TOKENIZER.get_or_init(|| TextTokenizer::from_dir(&fixture("tiny-base")).unwrap())
    }

    fn read_ids(path: &Path, name: &str) -> Option<Vec<u32>> {
        let bytes = std::fs::read(path).unwrap();
        let tensors = SafeTensors::deserialize(&bytes).unwrap();
        let view = tensors.tensor(name).ok()?;
        assert_eq!(view.dtype(), safetensors::Dtype::I64, "{name}");
        let to_id = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap()) as u32;
        Some(view.data().chunks_exact(8).map(to_id).collect())
    }

    fn manifest(dir: &Path) -> serde_json::Value {
        let text = std::fs::read_to_string(dir.join("refs/manifest.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn fixtures() -> [(&'static str, &'static TextTokenizer); 2] {
        [("tiny-custom-voice", tokenizer()), ("tiny-base", base_tokenizer())]
    }

    #[test]
    fn reproduces_text_tokenizer_refs() {
        for (fixture_name, tok) in fixtures() {
            let dir = fixture(fixture_name);
            let refs = dir.join("refs/text_tokenizer.safetensors");
            let manifest = manifest(&dir);
            let tensors = manifest["text_tokenizer"]["tensors"].as_object().unwrap();
            assert_eq!(tensors.len(), 4);
            for (name, info) in tensors {
                let text = info["descr"].as_str().unwrap();
                let expected = read_ids(&refs, name).unwrap();
                assert_eq!(tok.encode_with_special(text).unwrap(), expected, "{name}: {text:?}");
            }
        }
    }

    #[test]
    fn reproduces_e2e_prompt_ids() {
        for (fixture_name, tok) in fixtures() {
            let dir = fixture(fixture_name);
            let mut checked = 0;
            for (case, entry) in manifest(&dir).as_object().unwrap() {
                if !case.starts_with("e2e_") {
                    continue;
                }
                let file = dir.join("refs").join(entry["file"].as_str().unwrap());
                let meta = &entry["meta"];
                let text = meta["text"].as_str().unwrap();
                let input_ids = read_ids(&file, "input_ids").unwrap();
                assert_eq!(tok.assistant_text_ids(text).unwrap(), input_ids, "{case}");
                checked += 1;
                if let Some(expected) = read_ids(&file, "instruct_ids") {
                    let instruct = meta["instruct"].as_str().unwrap();
                    assert_eq!(tok.instruct_ids(instruct).unwrap(), expected, "{case}");
                    checked += 1;
                }
                if let Some(expected) = read_ids(&file, "ref_ids") {
                    let ref_text = meta["ref_text"].as_str().unwrap();
                    assert_eq!(tok.ref_text_ids(ref_text).unwrap(), expected, "{case}");
                    checked += 1;
                }
            }
            assert!(checked >= 4, "{fixture_name}: only {checked} id lists checked");
        }
    }

    #[test]
    fn documented_ids() {
        let tok = tokenizer();
        let ids = tok.assistant_text_ids("Hello world, this is a test.").unwrap();
        assert_eq!(ids[..3], [151644, 77091, 198]);
        assert_eq!(ids[3..ids.len() - 5], [9707, 1879, 11, 419, 374, 264, 1273, 13]);
        assert_eq!(ids[ids.len() - 5..], [151645, 198, 151644, 77091, 198]);
        assert_eq!(tok.role_ids(), [151644, 77091, 198]);
        assert_eq!(tok.encode_with_special("user").unwrap(), [872]);
        let tts = tok.encode_with_special("<tts_pad><tts_text_bos><tts_text_eod>").unwrap();
        assert_eq!(tts, [151671, 151672, 151673]);
        assert_eq!(tok.encode_with_special("<|audio_pad|>").unwrap(), [151675]);
    }

    #[test]
    fn decode_round_trips() {
        let tok = tokenizer();
        for text in ["Hello world, this is a test.", "é 你好 😀\n\tdon't", "<|im_start|>x"] {
            let ids = tok.encode_with_special(text).unwrap();
            assert_eq!(tok.decode(&ids).unwrap(), text);
        }
        let ids = tok.encode_with_special("e\u{301}").unwrap();
        assert_eq!(tok.decode(&ids).unwrap(), "\u{e9}", "input is NFC-normalised");
    }

    #[test]
    fn find_reserved_returns_first_added_token() {
        let tok = tokenizer();
        assert_eq!(tok.find_reserved("plain text <| im_end |>"), None);
        assert_eq!(tok.find_reserved("a <tts_pad> b <|im_end|>"), Some("<tts_pad>"));
        assert_eq!(tok.find_reserved("<|im_end|><tts_pad>"), Some("<|im_end|>"));
        assert_eq!(tok.find_reserved("x<tts_text_bos_single>"), Some("<tts_text_bos_single>"));
        assert_eq!(tok.find_reserved("think <think> more"), Some("<think>"));
        assert_eq!(tok.reserved_prefix_len("Hello <|im_"), 5);
        assert_eq!(tok.reserved_prefix_len("Hello <"), 1);
        assert_eq!(tok.reserved_prefix_len("Hello <|im_end|>"), 0);
        assert_eq!(tok.reserved_prefix_len("Hello"), 0);
    }

    #[test]
    fn rejects_reserved_tokens_per_field() {
        let tok = tokenizer();
        let field = |r: Result<Vec<u32>>| match r {
            Err(EngineError::InvalidRequest { field, .. }) => field,
            other => panic!("expected InvalidRequest, got {other:?}"),
        };
        assert_eq!(field(tok.assistant_text_ids("hi<|im_end|>")), "text");
        assert_eq!(field(tok.instruct_ids("<tts_pad>")), "instruct");
        assert_eq!(field(tok.ref_text_ids("<|endoftext|>")), "ref_text");
    }

    #[test]
    fn missing_or_bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("lyre-tokenizer-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["vocab.json", "tokenizer_config.json"] {
            std::fs::copy(fixture("tiny-custom-voice").join(file), dir.join(file)).unwrap();
        }
        let err = TextTokenizer::from_dir(&dir).err().unwrap().to_string();
        assert!(err.contains("merges.txt"), "{err}");

        std::fs::write(dir.join("merges.txt"), "#version: 0.2\nĠ Ġ x\n").unwrap();
        let err = TextTokenizer::from_dir(&dir).err().unwrap().to_string();
        assert!(err.contains("merges.txt") && err.contains("line 2"), "{err}");

        std::fs::write(dir.join("vocab.json"), "{").unwrap();
        let err = TextTokenizer::from_dir(&dir).err().unwrap().to_string();
        assert!(err.contains("vocab.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

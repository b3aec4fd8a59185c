//! The built-in demo model: a tiny Qwen3-TTS CustomVoice checkpoint in the real layout, with
//! seeded random weights and a byte-level tokenizer, written to disk on first use. It exercises
//! the whole server on a machine with no checkpoint; it speaks noise.

mod weights;

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Bumped whenever the generated files change, so stale copies are rebuilt.
const VERSION: u32 = 1;
const CONFIG: &str = include_str!("config.json");
const SPEECH_CONFIG: &str = include_str!("speech_tokenizer_config.json");
/// `[id, content, special]` of every added token, as in the real `tokenizer_config.json`.
const ADDED_TOKENS: &str = include_str!("added_tokens.json");

/// Where the demo checkpoint lives: `$LYRE_DEMO_DIR`, else `$XDG_CACHE_HOME/lyre`, else
/// `~/.cache/lyre`, else the temp dir.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LYRE_DEMO_DIR") {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("lyre").join(format!("demo-model-v{VERSION}"))
}

/// Writes the demo checkpoint into `dir` unless a complete copy is already there.
pub fn ensure(dir: &Path) -> anyhow::Result<()> {
    let marker = dir.join(".complete");
    if marker.exists() {
        return Ok(());
    }
    let tmp = dir.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("speech_tokenizer"))
        .with_context(|| format!("creating {}", tmp.display()))?;
    write_files(&tmp)?;
    std::fs::write(tmp.join(".complete"), VERSION.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(&tmp, dir).with_context(|| format!("moving the demo model to {}", dir.display()))?;
    Ok(())
}

fn write_files(dir: &Path) -> anyhow::Result<()> {
    let config: lyre_engine::checkpoint::config::ModelConfig = serde_json::from_str(CONFIG)?;
    let speech: lyre_engine::checkpoint::config::SpeechTokenizerConfig = serde_json::from_str(SPEECH_CONFIG)?;
    std::fs::write(dir.join("config.json"), CONFIG)?;
    std::fs::write(dir.join("speech_tokenizer/config.json"), SPEECH_CONFIG)?;
    std::fs::write(
        dir.join("speech_tokenizer/preprocessor_config.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "feature_extractor_type": "EncodecFeatureExtractor", "feature_size": 1,
            "padding_side": "right", "padding_value": 0.0, "return_attention_mask": true, "sampling_rate": 24000
        }))?,
    )?;
    std::fs::write(
        dir.join("generation_config.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "do_sample": true, "repetition_penalty": 1.05, "temperature": 0.9, "top_p": 1.0, "top_k": 50,
            "subtalker_dosample": true, "subtalker_temperature": 0.9, "subtalker_top_p": 1.0,
            "subtalker_top_k": 50, "max_new_tokens": 8192
        }))?,
    )?;
    write_tokenizer(dir)?;
    weights::write_safetensors(
        &dir.join("model.safetensors"),
        &lyre_engine::checkpoint::expected::main_model_tensors(&config),
        1,
    )?;
    weights::write_safetensors(
        &dir.join("speech_tokenizer/model.safetensors"),
        &lyre_engine::checkpoint::expected::speech_tokenizer_tensors(&speech),
        2,
    )?;
    Ok(())
}

/// A byte-level BPE where every UTF-8 byte is one token (ids 0..255, in GPT-2's byte-to-character
/// mapping), except `assistant`, which merges into one token as in the real vocabulary (the
/// prompt layout counts on `<|im_start|>assistant\n` being three tokens), plus the real added
/// tokens at their real ids.
fn write_tokenizer(dir: &Path) -> anyhow::Result<()> {
    let added: Vec<(u32, String, bool)> = serde_json::from_str(ADDED_TOKENS)?;
    let mut vocab = serde_json::Map::new();
    for (id, ch) in byte_chars().into_iter().enumerate() {
        vocab.insert(ch.to_string(), id.into());
    }
    let mut decoder = serde_json::Map::new();
    for (id, content, special) in &added {
        vocab.insert(content.clone(), (*id).into());
        decoder.insert(
            id.to_string(),
            serde_json::json!({"content": content, "lstrip": false, "normalized": false,
                               "rstrip": false, "single_word": false, "special": special}),
        );
    }
    let mut merges = String::from("#version: 0.2\n");
    let word = "assistant";
    for end in 2..=word.len() {
        merges.push_str(&format!("{} {}\n", &word[..end - 1], &word[end - 1..end]));
        vocab.insert(word[..end].to_string(), (254 + end).into());
    }
    std::fs::write(dir.join("vocab.json"), serde_json::to_string(&vocab)?)?;
    std::fs::write(dir.join("merges.txt"), merges)?;
    let cfg = serde_json::json!({
        "add_bos_token": false, "add_prefix_space": false, "added_tokens_decoder": decoder,
        "bos_token": null, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "model_max_length": 131072, "tokenizer_class": "Qwen2Tokenizer", "unk_token": null
    });
    std::fs::write(dir.join("tokenizer_config.json"), serde_json::to_string_pretty(&cfg)?)?;
    Ok(())
}

/// GPT-2's reversible byte → printable character map used by byte-level BPE.
fn byte_chars() -> Vec<char> {
    let mut direct: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars: Vec<(u32, u32)> = direct.iter().map(|&b| (b, b)).collect();
    let mut next = 256;
    for b in 0..256u32 {
        if !direct.contains(&b) {
            chars.push((b, next));
            next += 1;
        }
    }
    direct.clear();
    chars.sort_unstable();
    chars.into_iter().map(|(_, c)| char::from_u32(c).expect("valid")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_model_loads_and_is_deterministic() {
        let a = std::env::temp_dir().join(format!("lyre-demo-a-{}", std::process::id()));
        let b = std::env::temp_dir().join(format!("lyre-demo-b-{}", std::process::id()));
        ensure(&a).unwrap();
        ensure(&b).unwrap();
        let model = lyre_engine::checkpoint::ModelDir::open(&a).unwrap();
        assert_eq!(model.describe(), "Qwen3-TTS 12Hz 0.6B CustomVoice");
        let ids = model.tokenizer.assistant_text_ids("Hi é").unwrap();
        assert_eq!(ids.len(), 3 + 5 + 5, "role, one token per byte, end: {ids:?}");
        for f in ["model.safetensors", "speech_tokenizer/model.safetensors", "vocab.json"] {
            assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{f}");
        }
        std::fs::remove_dir_all(a).unwrap();
        std::fs::remove_dir_all(b).unwrap();
    }
}

//! Checks the expected lists against the real checkpoints' manifests and the tiny fixtures.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{main_model_tensors, speech_tokenizer_tensors};
use crate::checkpoint::config::{read_json, ModelConfig, SpeechTokenizerConfig};
use crate::checkpoint::weights::{ExpectedTensor, WeightFile};

/// `$LYRE_SHARED` as the tests were built with it (cargo rebuilds them when it changes; the
/// engine reads no environment at run time), else the `shared/` folder beside the workspace.
fn shared() -> PathBuf {
    option_env!("LYRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn read_value(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

type ShapeMap = BTreeMap<String, (Vec<usize>, String)>;

fn ours(expected: &[ExpectedTensor]) -> ShapeMap {
    let map: ShapeMap =
        expected.iter().map(|t| (t.name.clone(), (t.shape.clone(), t.dtype.name().to_string()))).collect();
    assert_eq!(map.len(), expected.len(), "the expected list holds duplicate names");
    map
}

/// `{"name": [[shape...], "BF16"], ...}` from a manifest's `files.<file>.tensors`.
fn manifest_tensors(manifest: &Value, file: &str) -> ShapeMap {
    let tensors = manifest["files"][file]["tensors"]
        .as_object()
        .unwrap_or_else(|| panic!("manifest has no files.{file}.tensors"));
    tensors
        .iter()
        .map(|(name, v)| {
            let (shape, dtype): (Vec<usize>, String) =
                serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{file}: tensor {name}: {e}"));
            (name.clone(), (shape, dtype))
        })
        .collect()
}

/// Panics with every missing, extra and mismatched tensor, not just the first.
fn assert_same(label: &str, ours: &ShapeMap, theirs: &ShapeMap) {
    let mut report = Vec::new();
    for (name, want) in theirs {
        match ours.get(name) {
            None => report.push(format!("  missing {name} {want:?}")),
            Some(got) if got != want => report.push(format!("  differs {name}: ours {got:?}, file {want:?}")),
            Some(_) => {}
        }
    }
    for (name, got) in ours {
        if !theirs.contains_key(name) {
            report.push(format!("  extra   {name} {got:?}"));
        }
    }
    assert!(report.is_empty(), "{label}: {} problems\n{}", report.len(), report.join("\n"));
}

fn check_manifest(model: &str) {
    let path = shared().join(format!("reference/manifests/{model}.json"));
    let manifest = read_value(&path);
    let cfg: ModelConfig =
        serde_json::from_value(manifest["config"].clone()).unwrap_or_else(|e| panic!("{model}: config: {e}"));
    let st: SpeechTokenizerConfig = serde_json::from_value(manifest["speech_tokenizer_config"].clone())
        .unwrap_or_else(|e| panic!("{model}: speech_tokenizer_config: {e}"));

    let main = "model.safetensors";
    let codec = "speech_tokenizer/model.safetensors";
    assert_same(
        &format!("{model} {main}"),
        &ours(&main_model_tensors(&cfg)),
        &manifest_tensors(&manifest, main),
    );
    assert_same(
        &format!("{model} {codec}"),
        &ours(&speech_tokenizer_tensors(&st)),
        &manifest_tensors(&manifest, codec),
    );
}

#[test]
fn manifest_0b6_base() {
    check_manifest("Qwen3-TTS-12Hz-0.6B-Base");
}

#[test]
fn manifest_0b6_custom_voice() {
    check_manifest("Qwen3-TTS-12Hz-0.6B-CustomVoice");
}

#[test]
fn manifest_1b7_base() {
    check_manifest("Qwen3-TTS-12Hz-1.7B-Base");
}

#[test]
fn manifest_1b7_custom_voice() {
    check_manifest("Qwen3-TTS-12Hz-1.7B-CustomVoice");
}

#[test]
fn manifest_1b7_voice_design() {
    check_manifest("Qwen3-TTS-12Hz-1.7B-VoiceDesign");
}

/// Validates both safetensors files of a fixture in place; returns the main model's names.
fn check_fixture(name: &str) -> HashSet<String> {
    let dir = shared().join("fixtures").join(name);
    let cfg: ModelConfig = read_json(&dir.join("config.json")).unwrap_or_else(|e| panic!("{e}"));
    let st: SpeechTokenizerConfig =
        read_json(&dir.join("speech_tokenizer/config.json")).unwrap_or_else(|e| panic!("{e}"));
    let model_type = cfg.tts_model_type.as_str();

    let main = main_model_tensors(&cfg);
    WeightFile::open(&dir.join("model.safetensors"))
        .and_then(|f| f.validate(&main, model_type))
        .unwrap_or_else(|e| panic!("{e}"));
    WeightFile::open(&dir.join("speech_tokenizer/model.safetensors"))
        .and_then(|f| f.validate(&speech_tokenizer_tensors(&st), model_type))
        .unwrap_or_else(|e| panic!("{e}"));
    main.into_iter().map(|t| t.name).collect()
}

#[test]
fn fixture_tiny_custom_voice() {
    let names = check_fixture("tiny-custom-voice");
    // Its config carries a speaker_encoder_config, but only Base checkpoints hold the weights.
    assert!(!names.iter().any(|n| n.starts_with("speaker_encoder.")));
    assert!(!names.iter().any(|n| n.contains("small_to_mtp_projection")));
}

#[test]
fn fixture_tiny_base() {
    let names = check_fixture("tiny-base");
    assert!(names.contains("speaker_encoder.fc.weight"));
    assert!(names.contains("talker.code_predictor.small_to_mtp_projection.bias"));
}

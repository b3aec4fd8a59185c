use std::path::{Path, PathBuf};

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{EngineError, SessionRequest, TextInput};
use safetensors::tensor::TensorView;
use safetensors::SafeTensors;

use crate::support::*;

/// A writable copy of a fixture directory.
fn copy_fixture(name: &str, tag: &str) -> PathBuf {
    let src = fixture(name);
    let dst = std::env::temp_dir().join(format!("lyre-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dst);
    copy_dir(&src, &dst);
    dst
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "refs" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst.join(&name));
        } else {
            std::fs::copy(e.path(), dst.join(&name)).unwrap();
            let mut perm = std::fs::metadata(dst.join(&name)).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(dst.join(&name), perm).unwrap();
        }
    }
}

fn open_err(dir: &Path) -> String {
    let err = ModelDir::open(dir).expect_err("the broken checkpoint must not load");
    err.to_string()
}

#[test]
fn a_missing_tensor_is_named() {
    let dir = copy_fixture("tiny-custom-voice", "missing-tensor");
    let path = dir.join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let victim = "talker.model.layers.1.mlp.up_proj.weight";
    let kept: Vec<(String, TensorView)> = st.tensors().into_iter().filter(|(n, _)| n != victim).collect();
    safetensors::serialize_to_file(kept, None, &path).unwrap();
    let msg = open_err(&dir);
    assert!(msg.contains(victim) && msg.contains("model.safetensors") && msg.contains("missing"), "{msg}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_config_that_disagrees_with_the_weights_is_named() {
    let dir = copy_fixture("tiny-custom-voice", "bad-hidden");
    let path = dir.join("config.json");
    let mut cfg: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    cfg["talker_config"]["hidden_size"] = serde_json::json!(80);
    std::fs::write(&path, serde_json::to_string_pretty(&cfg).unwrap()).unwrap();
    let msg = open_err(&dir);
    assert!(msg.contains("model.safetensors") && msg.contains("talker.") && msg.contains("shape"), "{msg}");
    assert!(msg.contains("80"), "the message shows the shape the config implies: {msg}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn missing_files_are_named() {
    for file in ["merges.txt", "model.safetensors", "config.json", "speech_tokenizer/model.safetensors"] {
        let dir = copy_fixture("tiny-custom-voice", &format!("missing-{}", file.replace('/', "-")));
        std::fs::remove_file(dir.join(file)).unwrap();
        let msg = open_err(&dir);
        let leaf = Path::new(file).file_name().unwrap().to_str().unwrap();
        assert!(msg.contains(leaf), "{file}: {msg}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

fn request(voice: &str, language: &str) -> SessionRequest {
    SessionRequest {
        text: TextInput::Whole("Hello.".into()),
        voice: VoiceSpec::Speaker(voice.into()),
        language: language.into(),
        instruct: None,
        mode: TextMode::NonStreaming,
        sampling: SamplingParams::from_generation_config(&Default::default(), 0),
        max_frames: 4,
        max_frames_per_segment: None,
    }
}

#[test]
fn unknown_speaker_and_language_list_the_valid_ones() {
    let mut engine = engine("tiny-custom-voice", 1);
    match engine.start(request("nobody", "english")) {
        Err(EngineError::UnknownSpeaker { valid, .. }) => assert!(valid.contains(&"vivian".to_string())),
        other => panic!("expected UnknownSpeaker, got {other:?}"),
    }
    match engine.start(request("Vivian", "klingon")) {
        Err(e @ EngineError::UnknownLanguage { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("auto") && msg.contains("english") && msg.contains("klingon"), "{msg}");
        }
        other => panic!("expected UnknownLanguage, got {other:?}"),
    }
    // Speaker names are case-insensitive; a good request takes the only slot.
    engine.start(request("VIVIAN", "English")).unwrap();
    assert!(matches!(engine.start(request("ryan", "auto")), Err(EngineError::Capacity(_))));
}

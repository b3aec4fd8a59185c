use super::*;
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;

fn model(name: &str) -> ModelDir {
    let shared = std::env::var_os("LYRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    ModelDir::open(shared.join("fixtures").join(name)).unwrap()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lyre-voices-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn icl_voice(name: &str, cfg: &ModelConfig) -> StoredVoice {
    let x: Vec<f32> = (0..cfg.talker_config.hidden_size).map(|i| (i as f32 * 0.37).sin() / 3.0).collect();
    let reference = VoiceReference { text: "Okay. Yeah.".into(), codes: vec![[7; 16], [2047; 16]] };
    StoredVoice::new(name, cfg, x, Some(reference), 1.04)
}

#[test]
fn voices_survive_a_reopen_exactly() {
    let m = model("tiny-base");
    let dir = temp_dir("reopen");
    let store = VoiceStore::open(&dir, 10).unwrap();
    assert!(store.list().is_empty() && !dir.exists(), "an empty store makes no directory");
    let v = icl_voice("alice", &m.config);
    store.insert(v.clone()).unwrap();
    let x_only = StoredVoice::new("bob", &m.config, v.x_vector.clone(), None, 2.0);
    store.insert(x_only).unwrap();
    let again = VoiceStore::open(&dir, 10).unwrap();
    assert_eq!(*again.get("alice").unwrap(), v, "f32 values round-trip exactly through JSON");
    assert!(again.get("alice").unwrap().has_transcript());
    assert!(!again.get("bob").unwrap().has_transcript());
    assert_eq!(again.list().iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["alice", "bob"]);
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "no temporary files are left: {names:?}");
    assert!(again.remove("alice").unwrap());
    assert!(!again.remove("alice").unwrap());
    assert!(VoiceStore::open(&dir, 10).unwrap().get("alice").is_none());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_name_is_never_overwritten_and_the_store_is_bounded() {
    let m = model("tiny-base");
    let dir = temp_dir("bounded");
    let store = VoiceStore::open(&dir, 2).unwrap();
    store.insert(icl_voice("a", &m.config)).unwrap();
    let e = store.insert(icl_voice("a", &m.config)).unwrap_err();
    assert_eq!(Failure::from(&e).status(), 409);
    store.insert(icl_voice("b", &m.config)).unwrap();
    let e = store.insert(icl_voice("c", &m.config)).unwrap_err();
    assert_eq!(Failure::from(&e).code, "voice_store_full");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn voice_specs_follow_the_transcript_and_refuse_other_models() {
    let base = model("tiny-base");
    let v = icl_voice("alice", &base.config);
    assert!(matches!(v.voice_spec(&base.config, "voice").unwrap(), VoiceSpec::Icl { .. }));
    let x_only = StoredVoice::new("bob", &base.config, v.x_vector.clone(), None, 2.0);
    assert_eq!(x_only.voice_spec(&base.config, "voice").unwrap(), VoiceSpec::Vector(v.x_vector.clone()));
    let cv = model("tiny-custom-voice");
    assert_eq!(cv.config.tts_model_type, ModelType::CustomVoice);
    let f = v.voice_spec(&cv.config, "voice").unwrap_err();
    assert_eq!((f.status(), f.code.as_str()), (400, "voice_model_mismatch"));
    assert!(f.message.contains("base") && f.message.contains("custom_voice"), "{}", f.message);
}

#[test]
fn bad_files_are_skipped_not_fatal() {
    let m = model("tiny-base");
    let dir = temp_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("junk.json"), b"not json").unwrap();
    std::fs::write(dir.join("Bad Name.json"), b"{}").unwrap();
    let mut wrong = icl_voice("other", &m.config);
    wrong.name = "renamed".into();
    std::fs::write(dir.join("other.json"), serde_json::to_vec(&wrong).unwrap()).unwrap();
    let good = icl_voice("good", &m.config);
    std::fs::write(dir.join("good.json"), serde_json::to_vec(&good).unwrap()).unwrap();
    let store = VoiceStore::open(&dir, 10).unwrap();
    assert_eq!(store.list().iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["good"]);
    std::fs::remove_dir_all(dir).unwrap();
}

//! VoiceDesign: no voices at all, the `instruct` field describes the voice. The tiny
//! CustomVoice fixture with `tts_model_type = "voice_design"` and no speakers stands in for a
//! VoiceDesign checkpoint (the weights are laid out the same).

use std::path::PathBuf;

use crate::support::*;

/// A VoiceDesign model directory made from the tiny CustomVoice fixture.
fn voice_design_fixture() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let src = fixture("tiny-custom-voice");
        let dst = temp_dir("tiny-voice-design");
        std::fs::create_dir_all(&dst).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let name = entry.unwrap().file_name();
            if name != "config.json" {
                std::os::unix::fs::symlink(src.join(&name), dst.join(&name)).unwrap();
            }
        }
        let mut cfg: serde_json::Value =
            serde_json::from_slice(&std::fs::read(src.join("config.json")).unwrap()).unwrap();
        cfg["tts_model_type"] = "voice_design".into();
        cfg["talker_config"]["spk_id"] = serde_json::json!({});
        cfg["talker_config"]["spk_is_dialect"] = serde_json::json!({});
        std::fs::write(dst.join("config.json"), cfg.to_string()).unwrap();
        dst
    })
    .clone()
}

const DESCRIPTION: &str = "A warm, low voice, speaking slowly.";

#[tokio::test]
async fn voice_design_lists_no_voices_and_requires_an_instruct() {
    let dir = temp_dir("vd-voices");
    let state = app(&voice_design_fixture(), &dir);
    assert_eq!(state.model.config.tts_model_type.as_str(), "voice_design");
    let v = get(&state, "/v1/voices").await.json();
    assert_eq!(v["model_type"], "voice_design");
    assert_eq!(v["instruct"], "required");
    assert_eq!(v["cloning"], false);
    assert_eq!(v["voices"], serde_json::json!([]));

    let body =
        serde_json::json!({"text": "Hello.", "instruct": DESCRIPTION, "greedy": true, "max_frames": 3});
    let r = post_json(&state, "/v1/tts", body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("x-lyre-frames").parse::<u32>().unwrap() >= 1);
    let body = serde_json::json!({"model": "tts", "input": "Hello.", "voice": "", "instructions": DESCRIPTION,
                                  "greedy": true, "max_frames": 2});
    let r = post_json(&state, "/v1/audio/speech", body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    let r = post_json(&state, "/v1/tts", serde_json::json!({"text": "Hello."})).await;
    assert_eq!(r.error(), (400, "invalid_request".into(), Some("instruct".into())));
    let r = post_json(
        &state,
        "/v1/tts",
        serde_json::json!({"text": "Hello.", "voice": "vivian", "instruct": DESCRIPTION}),
    )
    .await;
    assert_eq!(r.error().2.as_deref(), Some("voice"));
}

#[tokio::test]
async fn voice_design_refuses_cloned_voices() {
    let dir = temp_dir("vd-cloned");
    let base = app(&fixture("tiny-base"), &dir);
    keep(&base, &case_voice("okay", "e2e_base_icl_stream_english", &base.model)).await;
    let state = app(&voice_design_fixture(), &dir);
    let listed = get(&state, "/v1/voices").await.json();
    assert_eq!(listed["voices"][0]["usable"], false, "{listed}");
    let body = serde_json::json!({"text": "Hello.", "voice": "okay", "instruct": DESCRIPTION});
    let r = post_json(&state, "/v1/tts", body).await;
    assert_eq!(r.error(), (400, "voice_model_mismatch".into(), Some("voice".into())));
    let clip = wav_clip(1.0, 24_000);
    let r = post_multipart(&state, &[Part::Text("name", "me"), Part::File("audio", &clip)]).await;
    assert_eq!(r.error(), (400, "cloning_unsupported".into(), Some("audio".into())));
    std::fs::remove_dir_all(dir).unwrap();
}

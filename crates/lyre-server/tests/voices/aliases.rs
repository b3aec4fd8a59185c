//! `voices.aliases`: OpenAI's voice names on a CustomVoice model's presets, and the precedence
//! of a preset, the tenant's own voice and an alias. `GET /v1/audio/voices` is `GET /v1/voices`.

use crate::support::*;

const TEXT: &str = "Hello world, this is a test.";

async fn fingerprint(state: &lyre_server::http::AppState, uri: &str, body: serde_json::Value) -> String {
    let r = post_json(state, uri, body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.header("x-lyre-codes-fnv1a").to_string()
}

fn tts(voice: &str) -> serde_json::Value {
    serde_json::json!({"text": TEXT, "voice": voice, "greedy": true, "max_frames": 4, "format": "pcm"})
}

#[tokio::test]
async fn openai_names_speak_with_their_presets_on_a_custom_voice_model() {
    let dir = temp_dir("aliases-cv");
    let state = app(&fixture("tiny-custom-voice"), &dir);
    let aliases = &state.config.voices.aliases;
    assert_eq!(aliases.len(), 11, "a default for each of OpenAI's voices");
    for (alias, preset) in aliases {
        assert_eq!(
            fingerprint(&state, "/v1/tts", tts(alias)).await,
            fingerprint(&state, "/v1/tts", tts(preset)).await,
            "{alias} speaks as {preset}"
        );
    }
    let speech = serde_json::json!({"model": "tts-1", "input": TEXT, "voice": "ALLOY", "greedy": true,
                                    "max_frames": 4, "response_format": "pcm"});
    let r = post_json(&state, "/v1/audio/speech", speech).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let listed = get(&state, "/v1/voices").await;
    assert_eq!(listed.json()["aliases"]["alloy"], "vivian");
    let openai = get(&state, "/v1/audio/voices").await;
    assert_eq!((openai.status, openai.json()), (200, listed.json()), "the same answer");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_tenants_own_voice_comes_before_an_alias_and_a_preset_before_both() {
    let dir = temp_dir("aliases-base");
    let state = app_with(&fixture("tiny-base"), &dir, |cfg| {
        cfg.voices.aliases.insert("echo".into(), "okay".into());
    });
    keep(&state, &case_voice("okay", "e2e_base_icl_stream_english", &state.model)).await;
    keep(&state, &case_voice("alloy", "e2e_base_xvec_stream_english", &state.model)).await;
    let icl = fnv(&ref_frames("e2e_base_icl_stream_english", "codes"));
    let xvec = fnv(&ref_frames("e2e_base_xvec_stream_english", "codes"));
    let streaming = |voice: &str| {
        serde_json::json!({"text": TEXT, "voice": voice, "language": "english", "text_mode": "streaming",
                           "greedy": true, "max_frames": 11, "format": "pcm"})
    };
    // `alloy` is an alias of a preset this model lacks, and the tenant's own voice: its voice.
    assert_eq!(fingerprint(&state, "/v1/tts", streaming("alloy")).await, xvec);
    // `echo` aliases the tenant's stored `okay`.
    assert_eq!(fingerprint(&state, "/v1/tts", streaming("echo")).await, icl);
    assert_eq!(fingerprint(&state, "/v1/tts", streaming("okay")).await, icl);
    // An alias of nothing this model or tenant has is an unknown voice.
    let r = post_json(&state, "/v1/tts", streaming("nova")).await;
    assert_eq!(r.error(), (400, "unknown_voice".into(), Some("voice".into())));
    let listed = get(&state, "/v1/voices").await.json();
    assert_eq!(listed["aliases"], serde_json::json!({"echo": "okay"}), "only aliases that lead somewhere");
    std::fs::remove_dir_all(dir).unwrap();

    // On a CustomVoice model a preset's own name always wins: an upload cannot take it, and an
    // alias of a preset never reaches the database.
    let dir = temp_dir("aliases-preset");
    let cv = app_with(&fixture("tiny-custom-voice"), &dir, |cfg| {
        cfg.voices.aliases.insert("ryan".into(), "vivian".into());
    });
    assert_eq!(
        fingerprint(&cv, "/v1/tts", tts("ryan")).await,
        fingerprint(&cv, "/v1/tts", tts("Ryan")).await,
        "the preset, not the alias"
    );
    assert_ne!(
        fingerprint(&cv, "/v1/tts", tts("ryan")).await,
        fingerprint(&cv, "/v1/tts", tts("vivian")).await
    );
    std::fs::remove_dir_all(dir).unwrap();
}

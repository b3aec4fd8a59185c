//! Uploads and one-off clones that run the real speaker and speech encoders.
//!
//! NEEDS THE ENCODERS: in a branch where `audio_input`, `speaker_encoder` and `speech_encoder`
//! are still the skeleton (every call is `EngineError::ReferenceAudio`), these tests fail; they
//! pass once those are merged.

use std::sync::Arc;

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use lyre_server::http::router;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

/// The state with room for real clips (the shared test config allows 64 KiB uploads).
fn roomy(mut state: lyre_server::http::AppState) -> lyre_server::http::AppState {
    let mut cfg = (*state.config).clone();
    cfg.voices.max_upload_bytes = 4 << 20;
    state.config = Arc::new(cfg);
    state
}

#[tokio::test]
async fn upload_with_a_transcript_stores_an_icl_voice_without_the_audio() {
    let dir = temp_dir("enc-icl");
    let state = roomy(app(&fixture("tiny-base"), &dir));
    let clip = wav_clip(2.0, 24_000);
    let parts =
        [Part::Text("name", "clip"), Part::File("audio", &clip), Part::Text("transcript", "Okay. Yeah.")];
    let r = post_multipart(&state, &parts).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(
        (v["name"].as_str(), v["kind"].as_str(), v["has_transcript"].as_bool()),
        (Some("clip"), Some("cloned"), Some(true))
    );
    assert_eq!(v["reference_frames"], 25, "ceil(2 s × 12.5 Hz)");
    for file in ["voices.db", "voices.db-wal"] {
        let bytes = std::fs::read(dir.join(file)).unwrap_or_default();
        assert!(!bytes.windows(4).any(|w| w == b"RIFF"), "the audio is not stored ({file})");
    }
    let body = serde_json::json!({"text": "Hello.", "voice": "clip", "greedy": true, "max_frames": 2});
    assert_eq!(post_json(&state, "/v1/tts", body).await.status, 200);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn upload_without_a_transcript_stores_an_x_vector_voice() {
    let dir = temp_dir("enc-xvec");
    let state = app(&fixture("tiny-base"), &dir);
    let clip = wav_clip(1.0, 16_000);
    let r = post_multipart(&state, &[Part::Text("name", "plain"), Part::File("audio", &clip)]).await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["has_transcript"], false);
    assert_eq!(r.json()["reference_frames"], 0);
    let tenant = lyre_server::tenants::Tenant::default_tenant();
    let stored = state.voices.get(&tenant, "plain").await.unwrap().unwrap();
    assert_eq!(stored.x_vector.len(), state.model.config.talker_config.hidden_size);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn upload_refuses_clips_that_are_not_audio_too_short_or_too_long() {
    let dir = temp_dir("enc-bad");
    let state = roomy(app(&fixture("tiny-base"), &dir));
    let short = wav_clip(0.2, 24_000);
    let long = wav_clip(61.0, 8_000);
    for (bytes, what) in [(&b"this is not audio"[..], ""), (&short[..], "at least"), (&long[..], "at most")] {
        let r = post_multipart(&state, &[Part::Text("name", "x"), Part::File("audio", bytes)]).await;
        assert_eq!(r.error(), (400, "invalid_reference_audio".into(), Some("audio".into())));
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(what), "{msg}");
    }
    assert!(stored_names(&state).await.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn websocket_ref_audio_clones_once_and_speaks() {
    let dir = temp_dir("enc-ws");
    let state = app(&fixture("tiny-base"), &dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = state.clone();
    tokio::spawn(async move { axum::serve(listener, router(served)).await });
    let mut req = format!("ws://{addr}/v1/tts/stream").into_client_request().unwrap();
    req.headers_mut().insert("sec-websocket-protocol", "lyre".parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let clip = base64::engine::general_purpose::STANDARD.encode(wav_clip(0.8, 16_000));
    let start = serde_json::json!({"type": "start", "text": "Hi.", "ref_audio": clip, "ref_text": "Okay.",
                                   "greedy": true, "max_frames": 2});
    ws.send(Message::text(start.to_string())).await.unwrap();
    ws.send(Message::text(r#"{"type":"end"}"#)).await.unwrap();
    let mut types = Vec::new();
    while let Some(Ok(msg)) = ws.next().await {
        if let Message::Text(t) = msg {
            let m: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
            types.push(m["type"].as_str().unwrap().to_string());
            assert_ne!(m["type"], "error", "{m}");
            if m["type"] == "done" {
                break;
            }
        }
    }
    assert_eq!(types, ["started", "done"]);
    assert!(stored_names(&state).await.is_empty(), "one-off clones are not stored");
}

#[tokio::test]
async fn concurrent_uploads_of_one_name_store_exactly_one() {
    let dir = temp_dir("enc-race");
    let state = app(&fixture("tiny-base"), &dir);
    let clip = wav_clip(1.0, 24_000);
    let parts = [Part::Text("name", "same"), Part::File("audio", &clip)];
    let replies = futures_util::future::join_all((0..4).map(|_| post_multipart(&state, &parts))).await;
    let mut statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [201, 409, 409, 409], "exactly one upload of a name wins");
    assert_eq!(stored_names(&state).await, ["same"]);
    std::fs::remove_dir_all(dir).unwrap();
}

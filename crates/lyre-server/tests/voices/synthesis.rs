//! Stored voices by name in every endpoint (their greedy output is the reference case's), the
//! refusals around them, and the WebSocket's one-off `ref_audio` mistakes.

use futures_util::{SinkExt, StreamExt};
use lyre_server::http::{router, AppState};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

const TEXT: &str = "Hello world, this is a test.";

async fn base_with_voices(tag: &str) -> (AppState, std::path::PathBuf) {
    let dir = temp_dir(tag);
    let state = app(&fixture("tiny-base"), &dir);
    for (name, case) in [("okay", "e2e_base_icl_stream_english"), ("xvec", "e2e_base_xvec_stream_english")] {
        keep(&state, &case_voice(name, case, &state.model)).await;
    }
    (state, dir)
}

#[tokio::test]
async fn stored_voices_reproduce_the_reference_cases_over_http() {
    let (state, dir) = base_with_voices("http").await;
    for (voice, case) in [("okay", "e2e_base_icl_stream_english"), ("xvec", "e2e_base_xvec_stream_english")] {
        let body = serde_json::json!({
            "text": TEXT, "voice": voice, "language": "english", "text_mode": "streaming",
            "greedy": true, "max_frames": 11, "format": "pcm",
        });
        let r = post_json(&state, "/v1/tts", body).await;
        assert_eq!(r.status, 200, "{voice}: {}", String::from_utf8_lossy(&r.body));
        let want = ref_frames(case, "codes");
        assert_eq!(r.header("x-lyre-frames"), want.len().to_string(), "{voice}");
        assert_eq!(r.header("x-lyre-codes-fnv1a"), fnv(&want), "{voice}: the reference codes");
        // Only the generated speech comes back: the reference clip's samples are cut.
        let pcm = pcm16(&r.body);
        let wav = ref_f32(case, "wav");
        assert_eq!(pcm.len(), wav.len(), "{voice}: samples");
        let d = pcm.iter().zip(&wav).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(d <= 2e-4, "{voice}: waveform max|Δ| {d}");
    }
    // The OpenAI endpoint takes the same names.
    let body = serde_json::json!({
        "model": "tts", "input": TEXT, "voice": "okay", "language": "english",
        "text_mode": "streaming", "greedy": true, "max_frames": 11, "response_format": "pcm",
    });
    let r = post_json(&state, "/v1/audio/speech", body).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(pcm16(&r.body).len(), ref_f32("e2e_base_icl_stream_english", "wav").len());
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn unknown_and_foreign_voices_are_clear_400s() {
    let (state, dir) = base_with_voices("refusals").await;
    let body = serde_json::json!({"text": TEXT, "voice": "nobody"});
    let r = post_json(&state, "/v1/tts", body).await;
    assert_eq!(r.error(), (400, "unknown_voice".into(), Some("voice".into())));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("GET /v1/voices"), "says where to look");
    let r = post_json(&state, "/v1/tts", serde_json::json!({"text": TEXT})).await;
    assert_eq!(r.error(), (400, "invalid_request".into(), Some("voice".into())));
    let r =
        post_json(&state, "/v1/tts", serde_json::json!({"text": TEXT, "voice": "okay", "instruct": "Sing."}))
            .await;
    assert_eq!(r.error().2.as_deref(), Some("instruct"));

    // The same directory served by a CustomVoice model: the stored voice is listed as unusable
    // and refused by name.
    let cv = app(&fixture("tiny-custom-voice"), &dir);
    let listed = get(&cv, "/v1/voices").await.json();
    let entry = listed["voices"].as_array().unwrap().iter().find(|v| v["name"] == "okay").cloned();
    assert_eq!(entry.unwrap()["usable"], false);
    let r = post_json(&cv, "/v1/tts", serde_json::json!({"text": TEXT, "voice": "okay"})).await;
    assert_eq!(r.error(), (400, "voice_model_mismatch".into(), Some("voice".into())));
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("base") && msg.contains("custom_voice"), "{msg}");
    // Presets still work there.
    let body = serde_json::json!({"text": "Hi.", "voice": "vivian", "greedy": true, "max_frames": 2});
    assert_eq!(post_json(&cv, "/v1/tts", body).await.status, 200);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A served router on a free port (for the WebSocket), and a connected socket.
async fn socket(
    state: AppState,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router(state)).await });
    let mut req = format!("ws://{addr}/v1/tts/stream").into_client_request().unwrap();
    req.headers_mut().insert("sec-websocket-protocol", "lyre".parse().unwrap());
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next JSON (text) message, skipping audio.
async fn next_json(ws: &mut Ws) -> serde_json::Value {
    loop {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(120), ws.next())
            .await
            .expect("a reply in time")
            .expect("the socket stays open")
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

async fn send(ws: &mut Ws, v: serde_json::Value) {
    ws.send(Message::text(v.to_string())).await.unwrap();
}

#[tokio::test]
async fn websocket_start_ref_audio_mistakes_are_error_messages() {
    let (state, dir) = base_with_voices("ws-mistakes").await;
    let mut ws = socket(state).await;
    let start = |extra: serde_json::Value| {
        let mut m = serde_json::json!({"type": "start", "text": "Hi."});
        m.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        m
    };
    for (extra, field, what) in [
        (serde_json::json!({"ref_audio": "@@not base64@@"}), "ref_audio", "base64"),
        (serde_json::json!({"ref_audio": "UklGRg=="}), "ref_audio", ""),
        (serde_json::json!({"ref_text": "Okay."}), "ref_text", "ref_audio"),
        (serde_json::json!({"ref_audio": "UklGRg==", "voice": "okay"}), "ref_audio", "not both"),
    ] {
        send(&mut ws, start(extra.clone())).await;
        let m = next_json(&mut ws).await;
        assert_eq!(m["type"], "error", "{extra}: {m}");
        assert_eq!(m["field"], field, "{extra}: {m}");
        assert!(m["message"].as_str().unwrap().contains(what), "{extra}: {m}");
        if field == "ref_audio" && what.is_empty() {
            assert_eq!(m["code"], "invalid_reference_audio", "{m}");
        }
    }
    // The socket is still usable: a stored voice by name starts a session.
    send(&mut ws, start(serde_json::json!({"voice": "xvec", "greedy": true, "max_frames": 2}))).await;
    assert_eq!(next_json(&mut ws).await["type"], "started");
    send(&mut ws, serde_json::json!({"type": "end"})).await;
    assert_eq!(next_json(&mut ws).await["type"], "done");
    std::fs::remove_dir_all(dir).unwrap();
}

/// ICL with text streamed in pieces gives the reference codes of the same text sent whole in
/// streaming mode: the prompt waits until the reference frames have text to pair with.
#[tokio::test]
async fn websocket_stored_icl_voice_with_streamed_text_matches_the_reference() {
    let (state, dir) = base_with_voices("ws-icl").await;
    let mut ws = socket(state).await;
    send(
        &mut ws,
        serde_json::json!({"type": "start", "voice": "okay", "language": "english", "greedy": true,
                           "max_frames": 11, "codes": true, "text": "Hello world,"}),
    )
    .await;
    assert_eq!(next_json(&mut ws).await["type"], "started");
    send(&mut ws, serde_json::json!({"type": "text", "text": " this is a test."})).await;
    send(&mut ws, serde_json::json!({"type": "end"})).await;
    let mut codes = Vec::new();
    loop {
        let m = next_json(&mut ws).await;
        match m["type"].as_str().unwrap() {
            "codes" => {
                let c: Vec<u16> = serde_json::from_value(m["codes"].clone()).unwrap();
                codes.push(<[u16; 16]>::try_from(c).unwrap());
            }
            "done" => break,
            other => panic!("unexpected {other}: {m}"),
        }
    }
    assert_eq!(codes, ref_frames("e2e_base_icl_stream_english", "codes"));
    std::fs::remove_dir_all(dir).unwrap();
}

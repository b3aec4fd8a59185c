//! Tenant isolation over HTTP and the WebSocket: a key sees, uses and deletes only its tenant's
//! voices; another tenant's voice is answered exactly as a voice that does not exist.

use axum::body::Body;
use axum::http::Request;
use futures_util::{SinkExt, StreamExt};
use lyre_server::config::TenantSection;
use lyre_server::http::{router, AppState};
use lyre_server::tenants::Tenant;
use lyre_server::voices::StoredVoice;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

const ACME_1: &str = "acme-key-0001";
const ACME_2: &str = "acme-key-0002";
const BETA: &str = "beta-key-0001";
const SOLO: &str = "solo-key-1234";
const TEXT: &str = "Hello world, this is a test.";

/// A Base server with a solo key and two named tenants; acme has `narrator` (the ICL case) and
/// beta has its own `narrator` (the x-vector case) and `beta-only`.
async fn tenants_app(tag: &str) -> (AppState, std::path::PathBuf) {
    let dir = temp_dir(tag);
    let state = app_with(&fixture("tiny-base"), &dir, |cfg| {
        cfg.auth.api_keys = vec![SOLO.into()];
        cfg.auth.tenants = vec![
            TenantSection { name: "acme".into(), keys: vec![ACME_1.into(), ACME_2.into()] },
            TenantSection { name: "beta".into(), keys: vec![BETA.into()] },
        ];
    });
    let (acme, beta) = (Tenant::new("acme").unwrap(), Tenant::new("beta").unwrap());
    let icl = case_voice("narrator", "e2e_base_icl_stream_english", &state.model);
    state.voices.insert(&acme, &icl).await.unwrap();
    let xvec = case_voice("narrator", "e2e_base_xvec_stream_english", &state.model);
    state.voices.insert(&beta, &xvec).await.unwrap();
    let only = case_voice("beta-only", "e2e_base_xvec_stream_english", &state.model);
    state.voices.insert(&beta, &only).await.unwrap();
    (state, dir)
}

async fn as_key(state: &AppState, key: &str, req: axum::http::request::Builder, body: Body) -> Reply {
    call(state, req.header("authorization", format!("Bearer {key}")).body(body).unwrap()).await
}

async fn list(state: &AppState, key: &str) -> Vec<String> {
    let r = as_key(state, key, Request::get("/v1/voices"), Body::empty()).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    v["voices"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect()
}

async fn tts(state: &AppState, key: &str, voice: &str) -> Reply {
    let body = serde_json::json!({"text": TEXT, "voice": voice, "language": "english", "text_mode": "streaming",
                                  "greedy": true, "max_frames": 11, "format": "pcm"});
    let req = Request::post("/v1/tts").header("content-type", "application/json");
    as_key(state, key, req, Body::from(body.to_string())).await
}

async fn remove(state: &AppState, key: &str, name: &str) -> Reply {
    as_key(state, key, Request::delete(format!("/v1/voices/{name}")), Body::empty()).await
}

/// An error body with the voice's name replaced, to compare "exists elsewhere" with "absent".
fn error_shape(r: &Reply, name: &str) -> (u16, String) {
    (r.status, String::from_utf8_lossy(&r.body).replace(name, "NAME"))
}

#[tokio::test]
async fn a_tenant_lists_and_uses_only_its_own_voices() {
    let (state, dir) = tenants_app("tenants-http").await;
    assert_eq!(list(&state, ACME_1).await, ["narrator"]);
    assert_eq!(list(&state, ACME_2).await, ["narrator"], "every key of a tenant sees its voices");
    assert_eq!(list(&state, BETA).await, ["beta-only", "narrator"]);
    assert!(list(&state, SOLO).await.is_empty(), "a solo key is a tenant of its own");

    // The same name gives each tenant its own voice: acme's is the ICL case, beta's the x-vector.
    for (key, case) in [(ACME_2, "e2e_base_icl_stream_english"), (BETA, "e2e_base_xvec_stream_english")] {
        let r = tts(&state, key, "narrator").await;
        assert_eq!(r.status, 200, "{key}: {}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.header("x-lyre-codes-fnv1a"), fnv(&ref_frames(case, "codes")), "{key}");
    }

    // Another tenant's voice is unknown, word for word as a name nobody has.
    let foreign = tts(&state, ACME_1, "beta-only").await;
    assert_eq!(foreign.error(), (400, "unknown_voice".into(), Some("voice".into())));
    assert_eq!(
        error_shape(&foreign, "beta-only"),
        error_shape(&tts(&state, ACME_1, "nobody").await, "nobody")
    );
    let foreign = remove(&state, ACME_1, "beta-only").await;
    assert_eq!(foreign.error(), (404, "unknown_voice".into(), Some("name".into())));
    assert_eq!(
        error_shape(&foreign, "beta-only"),
        error_shape(&remove(&state, ACME_1, "nobody").await, "nobody")
    );
    assert_eq!(list(&state, BETA).await, ["beta-only", "narrator"], "nothing of beta's was deleted");

    // Deleting one's own `narrator` leaves the other tenant's.
    assert_eq!(remove(&state, ACME_1, "narrator").await.status, 204);
    assert!(list(&state, ACME_2).await.is_empty());
    assert_eq!(tts(&state, BETA, "narrator").await.status, 200);
    // No key: nothing.
    assert_eq!(get(&state, "/v1/voices").await.status, 401);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn an_upload_never_overwrites_and_a_name_is_per_tenant() {
    let (state, dir) = tenants_app("tenants-upload").await;
    let clip = wav_clip(1.0, 24_000);
    let upload = |key: &'static str, name: &'static str| {
        let (content_type, body) = multipart_body(&[Part::Text("name", name), Part::File("audio", &clip)]);
        let req = Request::post("/v1/voices").header("content-type", content_type);
        let state = state.clone();
        async move { as_key(&state, key, req, Body::from(body)).await }
    };
    let r = upload(ACME_1, "narrator").await;
    assert_eq!(r.error(), (409, "voice_exists".into(), Some("name".into())), "acme's own name is taken");
    // beta's `beta-only` does not exist for acme: acme gets a voice of its own by that name.
    let r = upload(ACME_1, "beta-only").await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(list(&state, ACME_2).await, ["beta-only", "narrator"]);
    let beta = Tenant::new("beta").unwrap();
    let kept = state.voices.get(&beta, "beta-only").await.unwrap().unwrap();
    // The voice as it was stored (`case_voice` stamps the time it is called at).
    let stored = StoredVoice {
        created_unix_s: kept.created_unix_s,
        ..case_voice("beta-only", "e2e_base_xvec_stream_english", &state.model)
    };
    assert_eq!(kept, stored, "beta's voice is untouched");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn the_websocket_resolves_voices_within_the_callers_tenant() {
    let (state, dir) = tenants_app("tenants-ws").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router(state)).await });
    let session = |key: &'static str, voice: &'static str| async move {
        let mut req = format!("ws://{addr}/v1/tts/stream?token={key}").into_client_request().unwrap();
        req.headers_mut().insert("sec-websocket-protocol", "lyre".parse().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        let start = serde_json::json!({"type": "start", "voice": voice, "text": TEXT, "language": "english",
                                       "greedy": true, "max_frames": 11, "codes": true});
        ws.send(Message::text(start.to_string())).await.unwrap();
        ws.send(Message::text(r#"{"type":"end"}"#)).await.unwrap();
        let mut codes = Vec::new();
        loop {
            let msg = tokio::time::timeout(std::time::Duration::from_secs(120), ws.next()).await.unwrap();
            let Some(Ok(Message::Text(t))) = msg else { continue };
            let m: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
            match m["type"].as_str().unwrap() {
                "codes" => codes.push(m["codes"].clone()),
                "done" | "error" => return (m, codes),
                _ => {}
            }
        }
    };
    let want = |case: &str| -> Vec<serde_json::Value> {
        ref_frames(case, "codes").iter().map(|f| serde_json::json!(f)).collect()
    };
    let (done, codes) = session(ACME_1, "narrator").await;
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(codes, want("e2e_base_icl_stream_english"), "acme's narrator");
    let (done, codes) = session(BETA, "narrator").await;
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(codes, want("e2e_base_xvec_stream_english"), "beta's narrator");
    let (err, _) = session(ACME_2, "beta-only").await;
    assert_eq!((err["type"].as_str(), err["code"].as_str()), (Some("error"), Some("unknown_voice")), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

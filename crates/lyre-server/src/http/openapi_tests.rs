//! The handlers against `openapi.json`: every served route is documented and every documented
//! operation is served; each documented request field is read by its handler and no field the
//! handlers take is missing from the document. A failure says what to change where.
//!
//! The router runs over the built-in demo model with a GPU worker that never starts, so requests
//! are validated as usual and a valid one gets 503 `not_ready`; no GPU is needed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::DOCUMENT;
use crate::config::ServerConfig;
use crate::http::{router, AppState, KeyRegistry, SocketRegistry};
use crate::scheduler::{spawn_worker, Shared, WorkerOptions};
use crate::voices::{Encoders, VoiceStore};

const FILE: &str = "crates/lyre-server/openapi.json";

fn document() -> Value {
    serde_json::from_str(DOCUMENT).unwrap_or_else(|e| panic!("{FILE} is not JSON: {e}"))
}

/// documented path -> its methods (upper case).
fn operations(doc: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let paths = doc["paths"].as_object().expect("paths");
    paths
        .iter()
        .map(|(path, ops)| {
            let methods = ops.as_object().unwrap().keys().map(|m| m.to_uppercase()).collect();
            (path.clone(), methods)
        })
        .collect()
}

fn app() -> axum::Router {
    static STATE: OnceLock<AppState> = OnceLock::new();
    let state = STATE.get_or_init(|| {
        // Under the workspace's target/ (cleaned with it), reused run after run: the demo model is
        // made once, the voice database is fresh each run.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/openapi-test");
        let _ = std::fs::remove_dir_all(root.join("voices"));
        let model_dir = root.join("demo");
        crate::demo::ensure(&model_dir).unwrap();
        let model = Arc::new(lyre_engine::checkpoint::ModelDir::open(&model_dir).unwrap());
        let mut cfg = ServerConfig::default();
        cfg.voices.dir = root.join("voices").display().to_string();
        // The voice database's pool lives in the one runtime every request of these tests runs on.
        let _runtime = runtime().enter();
        let shared = Arc::new(Shared::new(cfg.engine.max_sessions, cfg.engine.max_queue));
        let opts = WorkerOptions {
            command_buffer: 16,
            warm_up: None,
            debug_fail_tick: None,
            launch_slack: std::time::Duration::from_millis(2),
            fast_first_audio: true,
            first_audio_margin: std::time::Duration::from_millis(15),
        };
        let no_gpu = || -> anyhow::Result<lyre_engine::Engine> { anyhow::bail!("no GPU in this test") };
        let (scheduler, _) = spawn_worker(no_gpu, shared, opts);
        AppState {
            scheduler,
            voices: Arc::new(VoiceStore::from_config(&cfg).unwrap()),
            encoders: Arc::new(Encoders::new(model.clone())),
            model,
            keys: Arc::new(KeyRegistry::new(&[], 0)),
            config: Arc::new(cfg),
            metrics: None,
            demo: true,
            sockets: Arc::new(SocketRegistry::new(0, 0)),
        }
    });
    router(state.clone())
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
    })
}

fn send(method: &Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    runtime().block_on(async {
        let builder = Request::builder().method(method).uri(path);
        let req = match body {
            Some(b) => builder.header("content-type", "application/json").body(Body::from(b.to_string())),
            None => builder.body(Body::empty()),
        };
        let resp = app().oneshot(req.unwrap()).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    })
}

/// A path of the document with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{name}", "somebody")
}

/// Every route the source declares: `.route("...")` in src/http, and the demo page's assets.
fn declared_routes() -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut routes = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".rs") || name.ends_with("_tests.rs") || name == "loading.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for piece in text.split(".route(").skip(1) {
            let piece = piece.trim_start();
            if let Some(rest) = piece.strip_prefix("\"/") {
                routes.insert(format!("/{}", &rest[..rest.find('"').unwrap()]));
            }
        }
        if path.ends_with("page.rs") {
            for piece in text.split("(\"/").skip(1) {
                routes.insert(format!("/{}", &piece[..piece.find('"').unwrap()]));
            }
        }
    }
    routes
}

#[test]
fn the_document_is_openapi_3_1_and_every_reference_resolves() {
    let doc = document();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1."), "{FILE}: openapi must be 3.1.x");
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("{FILE}: only local $refs: {r}"));
        assert!(doc.pointer(pointer).is_some(), "{FILE}: $ref {r} points nowhere");
    }
}

#[test]
fn every_route_is_documented_and_every_documented_path_is_a_route() {
    let documented: BTreeSet<String> = operations(&document()).into_keys().collect();
    let declared = declared_routes();
    assert!(declared.contains("/v1/tts"), "the route scan found nothing: {declared:?}");
    let undocumented: Vec<_> = declared.difference(&documented).collect();
    assert!(undocumented.is_empty(), "served but not in {FILE} (add them under `paths`): {undocumented:?}");
    let unserved: Vec<_> = documented.difference(&declared).collect();
    assert!(unserved.is_empty(), "in {FILE} but not served (remove them, or add the route): {unserved:?}");
}

#[test]
fn documented_methods_are_served_and_others_are_405() {
    for (path, methods) in operations(&document()) {
        for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            let (status, body) = send(&method, &concrete(&path), None);
            if methods.contains(method.as_str()) {
                assert_ne!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is documented but not served"
                );
                assert_ne!(
                    body["error"]["code"], "not_found",
                    "{method} {path} is documented but not served"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} answers {status} but {FILE} does not document it: add it, or remove the route"
                );
                assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
            }
        }
    }
}

/// The properties of a request body schema (following one `$ref`).
fn body_properties(doc: &Value, path: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let schema = &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let schema = match schema["$ref"].as_str() {
        Some(r) => doc.pointer(r.strip_prefix('#').unwrap()).unwrap(),
        None => schema,
    };
    assert_eq!(
        schema["additionalProperties"], false,
        "{FILE}: {path}'s body must say additionalProperties: false"
    );
    let props = schema["properties"].as_object().unwrap().keys().cloned().collect();
    let required =
        schema["required"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect();
    (props, required)
}

/// A valid body for `path` (only the required fields), to which one field is then added.
fn minimal_body(path: &str) -> Value {
    match path {
        "/v1/tts" => json!({ "text": "Hello.", "voice": "vivian" }),
        "/v1/audio/speech" => json!({ "model": "lyre", "input": "Hello.", "voice": "vivian" }),
        other => panic!("no minimal body for {other}"),
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" lists the fields a struct takes.
fn expected_fields(message: &str) -> BTreeSet<String> {
    let list =
        message.split("expected one of").nth(1).unwrap_or_else(|| panic!("no field list in: {message}"));
    list.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn every_documented_body_field_is_read_by_its_handler_and_no_other_is_taken() {
    let doc = document();
    for path in ["/v1/tts", "/v1/audio/speech"] {
        let (props, required) = body_properties(&doc, path);
        // A value of the wrong type for a field the handler reads is refused as that field's
        // type error; a field it does not know is refused as unknown.
        for field in &props {
            let mut body = minimal_body(path);
            body[field.as_str()] = json!({ "wrong": "type" });
            let (status, resp) = send(&Method::POST, path, Some(body));
            let message = resp["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {field}: {resp}");
            assert_eq!(resp["error"]["param"], field.as_str(), "{path} {field}: {resp}");
            assert!(
                !message.contains("unknown field"),
                "{path}: {FILE} documents `{field}` but the handler does not take it: {message}"
            );
        }
        for field in &required {
            let mut body = minimal_body(path);
            body.as_object_mut().unwrap().remove(field);
            let (status, resp) = send(&Method::POST, path, Some(body));
            assert_eq!(
                (status, resp["error"]["param"].as_str()),
                (StatusCode::BAD_REQUEST, Some(field.as_str()))
            );
        }
        let mut body = minimal_body(path);
        body["not_a_field"] = json!(1);
        let (status, resp) = send(&Method::POST, path, Some(body));
        assert_eq!((status, resp["error"]["param"].as_str()), (StatusCode::BAD_REQUEST, Some("not_a_field")));
        let taken = expected_fields(resp["error"]["message"].as_str().unwrap());
        let missing: Vec<_> = taken.difference(&props).collect();
        assert!(missing.is_empty(), "{path} takes fields {FILE} does not document: {missing:?}");
    }
}

#[test]
fn the_websocket_start_message_takes_exactly_the_documented_fields() {
    let doc = document();
    let variants = doc["components"]["schemas"]["WsClientMessage"]["oneOf"].as_array().unwrap();
    let start =
        variants.iter().find(|v| v["properties"]["type"]["const"] == "start").expect("a start variant");
    let documented: BTreeSet<String> =
        start["properties"].as_object().unwrap().keys().filter(|k| *k != "type").cloned().collect();
    let err = crate::protocol::parse_client_message(r#"{"type":"start","not_a_field":1}"#).unwrap_err();
    let taken = expected_fields(&err.message);
    assert_eq!(
        taken, documented,
        "the WebSocket `start` and {FILE}'s WsClientMessage start variant differ: make them list the same fields"
    );
    let types: BTreeSet<&str> =
        variants.iter().map(|v| v["properties"]["type"]["const"].as_str().unwrap()).collect();
    for t in &types {
        let msg = match *t {
            "text" => json!({ "type": "text", "text": "x" }),
            other => json!({ "type": other }),
        };
        assert!(
            crate::protocol::parse_client_message(&msg.to_string()).is_ok(),
            "documented message {msg} is refused"
        );
    }
}

#[test]
fn axum_rejections_get_the_error_shape() {
    // Not a WebSocket upgrade: axum's extractor refuses it; the answer is still an API error.
    let (status, body) = send(&Method::GET, "/v1/tts/stream", None);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

#[test]
fn the_served_document_is_the_file() {
    let (status, body) = send(&Method::GET, "/openapi.json", None);
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, document());
}

/// A number just outside a documented bound is refused, naming the field; one on the bound is not
/// refused for that field.
#[test]
fn documented_number_bounds_are_enforced_exactly() {
    let doc = document();
    let props = doc["components"]["schemas"]["TtsRequest"]["properties"].as_object().unwrap();
    let mut checked = 0;
    for (field, schema) in props {
        let bounds = [
            ("minimum", schema["minimum"].as_f64().map(|m| (m, m.next_down()))),
            ("maximum", schema["maximum"].as_f64().map(|m| (m, m.next_up()))),
            ("exclusiveMinimum", schema["exclusiveMinimum"].as_f64().map(|m| (m.next_up(), m))),
        ];
        let integer = schema["type"][0] == "integer";
        for (keyword, bound) in bounds {
            let Some((inside, outside)) = bound else { continue };
            if integer && inside.abs() > 1e15 {
                continue; // u64::MAX is not exact in f64; serde refuses anything larger anyway.
            }
            let value = |v: f64| {
                if integer {
                    json!(
                        v as i64
                            + if v < inside {
                                -1
                            } else if v > inside {
                                1
                            } else {
                                0
                            }
                    )
                } else {
                    json!(v)
                }
            };
            let mut body = minimal_body("/v1/tts");
            body[field.as_str()] = value(outside);
            let (status, resp) = send(&Method::POST, "/v1/tts", Some(body));
            assert_eq!(
                (status, resp["error"]["param"].as_str()),
                (StatusCode::BAD_REQUEST, Some(field.as_str())),
                "{field}: {outside} is outside {keyword} {inside} in {FILE} but the handler took it: {resp}"
            );
            let mut body = minimal_body("/v1/tts");
            body[field.as_str()] = value(inside);
            let (_, resp) = send(&Method::POST, "/v1/tts", Some(body));
            assert_ne!(
                resp["error"]["param"],
                field.as_str(),
                "{field}: {inside} is inside {keyword} but refused: {resp}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} bounds found");
}

/// A string one character over a documented `maxLength` is refused (413 naming the field); one
/// at the bound is not refused for its length.
#[test]
fn documented_string_lengths_are_enforced_exactly() {
    let doc = document();
    let mut checked = 0;
    for (path, schema) in [("/v1/tts", "TtsRequest"), ("/v1/audio/speech", "SpeechRequest")] {
        let props = doc["components"]["schemas"][schema]["properties"].as_object().unwrap();
        for (field, prop) in props {
            let Some(max) = prop["maxLength"].as_u64() else { continue };
            for (length, over) in [(max + 1, true), (max, false)] {
                let mut body = minimal_body(path);
                body[field.as_str()] = json!("é".repeat(length as usize));
                let (status, resp) = send(&Method::POST, path, Some(body));
                let refused =
                    status == StatusCode::PAYLOAD_TOO_LARGE && resp["error"]["param"] == field.as_str();
                assert_eq!(
                    refused, over,
                    "{path} {field}: {length} characters against maxLength {max} in {FILE}: {status} {resp}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 2, "only {checked} string bounds found");
}

/// `instructions` (OpenAI's name) and `instruct` are one field: both at once is refused, so a
/// documented bound on either cannot be dodged by sending the other.
#[test]
fn instructions_and_instruct_together_are_refused() {
    let mut body = minimal_body("/v1/audio/speech");
    body["instructions"] = json!("");
    body["instruct"] = json!("x".repeat(5000));
    let (status, resp) = send(&Method::POST, "/v1/audio/speech", Some(body));
    assert_eq!(
        (status, resp["error"]["param"].as_str()),
        (StatusCode::BAD_REQUEST, Some("instructions")),
        "{resp}"
    );
}

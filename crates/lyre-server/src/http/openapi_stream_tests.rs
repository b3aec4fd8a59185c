//! What the server sends besides request bodies, against `openapi.json`: every WebSocket server
//! message serializes to its documented schema, the SSE event types the handlers emit and the
//! `x-lyre-*` headers they set are the documented ones, and every configuration key the document
//! names exists. tests/e2e/test_openapi.py checks the same on the real server's responses.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::DOCUMENT;
use crate::config::ServerConfig;
use crate::errors::{ErrorCode, Failure};
use crate::protocol::ServerMessage;

const FILE: &str = "crates/lyre-server/openapi.json";

fn document() -> Value {
    serde_json::from_str(DOCUMENT).unwrap_or_else(|e| panic!("{FILE} is not JSON: {e}"))
}

/// The `type` constants of a `oneOf` message schema, with each variant.
fn variants<'a>(doc: &'a Value, schema: &str) -> Vec<(&'a str, &'a Value)> {
    let list = doc["components"]["schemas"][schema]["oneOf"].as_array().unwrap();
    list.iter().map(|v| (v["properties"]["type"]["const"].as_str().unwrap(), v)).collect()
}

/// The message's `type` on the wire. A new variant fails to compile here: give it an example in
/// [`server_messages`] and a schema in the document.
fn wire_type(m: &ServerMessage) -> &'static str {
    match m {
        ServerMessage::Started { .. } => "started",
        ServerMessage::Audio { .. } => "audio",
        ServerMessage::Codes { .. } => "codes",
        ServerMessage::Segment { .. } => "segment",
        ServerMessage::Flushed { .. } => "flushed",
        ServerMessage::Cancelled { .. } => "cancelled",
        ServerMessage::Done { .. } => "done",
        ServerMessage::Error { .. } => "error",
    }
}

/// One of each message, optional fields both set and left out.
fn server_messages() -> Vec<ServerMessage> {
    vec![
        ServerMessage::Started {
            context_id: "default".into(),
            session_id: "1f".into(),
            format: "opus",
            sample_rate: 24_000,
            samples_per_frame: 1920,
            bytes_per_frame: None,
            speed: 1.0,
            queued_ms: 0.25,
        },
        ServerMessage::Started {
            context_id: "call-7".into(),
            session_id: "20".into(),
            format: "mulaw",
            sample_rate: 8_000,
            samples_per_frame: 640,
            bytes_per_frame: Some(640),
            speed: 1.0,
            queued_ms: 0.0,
        },
        ServerMessage::Audio { context_id: "a".into(), frame: 0, data: "AAA=".into() },
        ServerMessage::Codes { context_id: "a".into(), frame: 0, codes: [2047; 16] },
        ServerMessage::Segment { context_id: "a".into(), index: 1 },
        ServerMessage::Flushed { context_id: "a".into(), frames: 12 },
        ServerMessage::Cancelled { context_id: "b".into() },
        ServerMessage::Done {
            context_id: "a".into(),
            frames: 3,
            audio_ms: 240.0,
            ttfa_ms: 12.5,
            rtf: 0.5,
            finish_reason: "eos",
        },
        ServerMessage::error(&Failure::invalid("voice", "no such voice")),
        ServerMessage::error_in(Some("b"), &Failure::new(ErrorCode::Busy, "every slot is taken")),
    ]
}

/// Whether `value` fits a property schema's `type`, `enum` and `minimum`.
fn fits(value: &Value, schema: &Value) -> bool {
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let typed = types.is_empty()
        || types.iter().any(|t| match *t {
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => false,
        });
    let listed = schema["enum"].as_array().is_none_or(|e| e.contains(value));
    let above = schema["minimum"].as_f64().is_none_or(|m| value.as_f64().is_none_or(|v| v >= m));
    typed && listed && above
}

#[test]
fn every_websocket_server_message_matches_its_documented_schema() {
    let doc = document();
    let documented = variants(&doc, "WsServerMessage");
    let mut sent = BTreeSet::new();
    for message in server_messages() {
        let kind = wire_type(&message);
        sent.insert(kind);
        let json = serde_json::to_value(&message).unwrap();
        let Some((_, schema)) = documented.iter().find(|(t, _)| *t == kind) else {
            panic!("{FILE}: WsServerMessage has no `{kind}` variant (the server sends {json})");
        };
        let props = schema["properties"].as_object().unwrap();
        for (field, value) in json.as_object().unwrap() {
            let prop = props.get(field).unwrap_or_else(|| {
                panic!("{FILE}: WsServerMessage `{kind}` lacks the field `{field}` the server sends: {json}")
            });
            assert!(
                fits(value, prop),
                "{FILE}: WsServerMessage `{kind}`.{field} does not fit {value}: {prop}"
            );
        }
        for field in schema["required"].as_array().unwrap() {
            let field = field.as_str().unwrap();
            assert!(
                json.get(field).is_some(),
                "{FILE}: WsServerMessage `{kind}` requires `{field}`, which the server may leave out: {json}"
            );
        }
    }
    let documented: BTreeSet<&str> = documented.iter().map(|(t, _)| *t).collect();
    assert_eq!(documented, sent, "{FILE}: WsServerMessage's variants and the server's messages differ");
}

/// The `"type": "..."` literals in a source file under src/http.
fn json_types_in(file: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.split("\"type\": \"").skip(1).map(|rest| rest[..rest.find('"').unwrap()].to_string()).collect()
}

#[test]
fn the_sse_events_the_handler_sends_are_the_documented_ones() {
    let doc = document();
    let documented: BTreeSet<String> =
        variants(&doc, "SpeechEvent").into_iter().map(|(t, _)| t.to_string()).collect();
    let sent = json_types_in("stream.rs");
    assert!(sent.contains("speech.audio.delta"), "the scan of stream.rs found nothing: {sent:?}");
    assert_eq!(
        documented, sent,
        "{FILE}: SpeechEvent's variants and the events src/http/stream.rs sends differ"
    );
}

/// Every header name under a response of the document.
fn documented_headers(doc: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(h)) = m.get("headers") {
                    out.extend(h.keys().map(|k| k.to_ascii_lowercase()));
                }
                m.values().for_each(|v| walk(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(&doc["paths"], &mut out);
    walk(&doc["components"]["responses"], &mut out);
    out
}

#[test]
fn every_lyre_header_the_handlers_set_is_documented_and_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut set = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".rs") || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for rest in text.split("\"x-lyre-").skip(1) {
            set.insert(format!("x-lyre-{}", &rest[..rest.find('"').unwrap()]).to_ascii_lowercase());
        }
    }
    assert!(set.contains("x-lyre-segments"), "the scan of src/http found nothing: {set:?}");
    let documented: BTreeSet<String> =
        documented_headers(&document()).into_iter().filter(|h| h.starts_with("x-lyre-")).collect();
    let undocumented: Vec<_> = set.difference(&documented).collect();
    assert!(undocumented.is_empty(), "src/http sets headers {FILE} does not document: {undocumented:?}");
    let unsent: Vec<_> = documented.difference(&set).collect();
    assert!(unsent.is_empty(), "{FILE} documents headers nothing in src/http sets: {unsent:?}");
}

/// Every `section.key` the document's texts name is a key of the configuration.
#[test]
fn every_configuration_key_the_document_names_exists() {
    let config = serde_json::to_value(ServerConfig::default()).unwrap();
    let sections: BTreeSet<&str> = config.as_object().unwrap().keys().map(String::as_str).collect();
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Object(m) => m.values().for_each(|v| strings(v, out)),
            Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let doc = document();
    let mut texts = Vec::new();
    strings(&doc, &mut texts);
    let mut named = BTreeSet::new();
    for text in texts {
        let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        for word in words.map(|w| w.trim_matches('.')) {
            let Some((section, key)) = word.split_once('.') else { continue };
            if sections.contains(section) && !key.contains('.') {
                assert!(
                    config[section].get(key).is_some(),
                    "{FILE} names `{word}`, which is not a configuration key (config/default.toml lists them)"
                );
                named.insert(word.to_string());
            }
        }
    }
    for key in ["engine.segment_tokens", "limits.max_text_chars", "server.max_body_bytes"] {
        assert!(named.contains(key), "{FILE} no longer names `{key}`; found {named:?}");
    }
}

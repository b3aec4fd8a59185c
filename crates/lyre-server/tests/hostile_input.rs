//! Property tests over the request parsers: the WebSocket message parser and the `POST /v1/tts`
//! body pipeline (JSON → fields → validation against the tiny fixture model). Whatever the
//! input — arbitrary bytes, arbitrary JSON, right keys with wrong or extreme values — the result
//! is a request or a 4xx failure, never a panic and never a 5xx.

use std::path::PathBuf;
use std::sync::OnceLock;

use lyre_engine::checkpoint::ModelDir;
use lyre_server::config::{EngineSection, LimitsSection};
use lyre_server::http::{parse_tts_request, Validator};
use lyre_server::protocol::parse_client_message;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn model() -> &'static ModelDir {
    static MODEL: OnceLock<ModelDir> = OnceLock::new();
    MODEL.get_or_init(|| {
        let shared = std::env::var_os("LYRE_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
        let dir = shared.join("fixtures/tiny-custom-voice");
        ModelDir::open(&dir).unwrap_or_else(|e| panic!("the fixture model at {}: {e}", dir.display()))
    })
}

fn limits() -> &'static LimitsSection {
    static LIMITS: OnceLock<LimitsSection> = OnceLock::new();
    LIMITS.get_or_init(LimitsSection::default)
}

/// Any JSON value, nested a few levels, with extreme numbers among the leaves.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        prop_oneof![Just(1e39), Just(-1e39), Just(f64::MAX), Just(f64::MIN_POSITIVE), Just(-0.0)]
            .prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
        prop_oneof![Just("ryan"), Just("vivian"), Just("english"), Just("start"), Just("text")]
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const FIELDS: &[&str] = &[
    "text",
    "format",
    "voice",
    "language",
    "instruct",
    "text_mode",
    "seed",
    "temperature",
    "top_k",
    "top_p",
    "repetition_penalty",
    "greedy",
    "max_frames",
    "ignore_eos",
    "codes",
    "type",
];

/// Objects made of the real field names (and a stray one) with arbitrary values: the inputs
/// most likely to get past the parser and into validation.
fn field_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((prop::sample::select(FIELDS), any_json()), 0..8).prop_map(|pairs| {
        let mut m = Map::new();
        for (k, v) in pairs {
            m.insert(k.to_string(), v);
        }
        m
    })
}

fn validator() -> Validator<'static> {
    Validator {
        model: model(),
        limits: limits(),
        aliases: None,
        segments: EngineSection::default().segment_limits(),
    }
}

fn check_tts(bytes: &[u8]) -> Result<(), TestCaseError> {
    let validator = validator();
    let failure = match parse_tts_request(&validator, bytes) {
        // The text is cut into the segments the engine speaks, or refused.
        Ok((mut request, _)) => validator.segment(&mut request).err(),
        Err(e) => Some(e.0),
    };
    if let Some(f) = failure {
        prop_assert!((400..500).contains(&f.status()), "{} for {:?}", f, String::from_utf8_lossy(bytes));
        prop_assert!(!f.message.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn ws_parser_takes_any_text(s in ".{0,200}") {
        if let Err(f) = parse_client_message(&s) {
            prop_assert_eq!(f.status(), 400);
            prop_assert_eq!(f.code, "invalid_message");
        }
    }

    #[test]
    fn ws_parser_takes_any_json(v in any_json(), ty in prop::sample::select(&["start", "text", "end", "cancel", "pause", ""][..])) {
        let mut v = v;
        if let Value::Object(m) = &mut v {
            m.insert("type".into(), json!(ty));
        }
        if let Ok(lyre_server::protocol::ClientMessage::Start(start)) = parse_client_message(&v.to_string()) {
            // A start that parses goes through the same validation as HTTP requests.
            let validator = validator();
            if let Err(f) = validator.build(&start.fields(), None, lyre_engine::prompt::TextMode::Streaming) {
                prop_assert!((400..500).contains(&f.status()), "{}", f);
            }
        }
    }

    #[test]
    fn tts_body_takes_any_bytes(b in prop::collection::vec(any::<u8>(), 0..300)) {
        check_tts(&b)?;
    }

    #[test]
    fn tts_body_takes_any_json(v in any_json()) {
        check_tts(v.to_string().as_bytes())?;
    }

    #[test]
    fn tts_body_takes_real_fields_with_any_values(mut m in field_object(), text in prop_oneof![Just(None), ".{0,64}".prop_map(Some)]) {
        if let Some(t) = text {
            m.insert("text".into(), json!(t));
        }
        m.remove("codes");
        m.remove("type");
        check_tts(Value::Object(m).to_string().as_bytes())?;
    }
}

#[test]
fn deeply_nested_json_is_a_400() {
    for depth in [100usize, 1000, 100_000] {
        let body = format!("{{\"text\":\"hi\",\"voice\":{}1{}}}", "[".repeat(depth), "]".repeat(depth));
        check_tts(body.as_bytes()).unwrap();
        let msg = format!("{{\"type\":\"text\",\"text\":{}\"a\"{}}}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(parse_client_message(&msg).unwrap_err().status(), 400);
    }
}

#[test]
fn overflowing_and_non_finite_sampling_values_are_rejected_by_name() {
    let validator = validator();
    for (field, value) in [
        ("temperature", "1e39"),
        ("temperature", "-1e39"),
        ("temperature", "-0.5"),
        ("top_p", "1e400"),
        ("top_p", "-1"),
        ("repetition_penalty", "1e39"),
        ("top_k", "-1"),
        ("top_k", "1e10"),
        ("seed", "-1"),
        ("seed", "18446744073709551616"),
        ("max_frames", "4294967296"),
        ("temperature", "\"NaN\""),
    ] {
        let body = format!("{{\"text\":\"Hello.\",\"voice\":\"ryan\",\"{field}\":{value}}}");
        let f = parse_tts_request(&validator, body.as_bytes()).expect_err(&body).0;
        assert_eq!(f.status(), 400, "{body}: {f}");
        assert_eq!(f.field.as_deref(), Some(field), "{body}: {f}");
    }
}

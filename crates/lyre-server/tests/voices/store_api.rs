//! `GET/POST/DELETE /v1/voices` without the encoders: listing, persistence, and every request
//! mistake that is refused before any audio is looked at.

use crate::support::*;

#[tokio::test]
async fn listing_shows_presets_of_a_custom_voice_model() {
    let state = app(&fixture("tiny-custom-voice"), &temp_dir("cv-list"));
    let r = get(&state, "/v1/voices").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["model_type"], "custom_voice");
    assert_eq!(v["cloning"], false);
    let voices = v["voices"].as_array().unwrap();
    assert_eq!(voices.len(), 9, "{v}");
    assert!(voices.iter().all(|p| p["kind"] == "preset"));
    assert!(voices.iter().any(|p| p["name"] == "vivian"));
}

#[tokio::test]
async fn stored_voices_survive_a_restart_and_delete_removes_them() {
    let dir = temp_dir("persist");
    let state = app(&fixture("tiny-base"), &dir);
    let icl = case_voice("okay_icl", "e2e_base_icl_stream_english", &state.model);
    let xvec = case_voice("Okay-Xvec", "e2e_base_xvec_stream_english", &state.model);
    keep(&state, &icl).await;
    keep(&state, &xvec).await;
    assert!(dir.join("voices.db").is_file(), "the default database is a SQLite file in voices.dir");

    // A restart: a new store instance reads the database.
    let restarted = app(&fixture("tiny-base"), &dir);
    let tenant = lyre_server::tenants::Tenant::default_tenant();
    let back = restarted.voices.get(&tenant, "okay_icl").await.unwrap().unwrap();
    assert_eq!(back, icl, "the voice round-trips exactly");
    let r = get(&restarted, "/v1/voices").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["cloning"], true);
    let voices = v["voices"].as_array().unwrap();
    let names: Vec<&str> = voices.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Okay-Xvec", "okay_icl"]);
    let icl_entry = voices.iter().find(|v| v["name"] == "okay_icl").unwrap();
    assert_eq!(icl_entry["kind"], "cloned");
    assert_eq!(icl_entry["has_transcript"], true);
    assert_eq!(icl_entry["reference_frames"], 14);
    assert_eq!(icl_entry["usable"], true);
    assert!(voices.iter().any(|v| v["name"] == "Okay-Xvec" && v["has_transcript"] == false));

    let r = delete(&restarted, "/v1/voices/okay_icl").await;
    assert_eq!(r.status, 204);
    let r = delete(&restarted, "/v1/voices/okay_icl").await;
    assert_eq!(r.error(), (404, "unknown_voice".into(), Some("name".into())));
    let again = app(&fixture("tiny-base"), &dir);
    assert_eq!(stored_names(&again).await, ["Okay-Xvec"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// `(status, code, param)` of an error reply.
type Expected<'a> = (u16, &'a str, Option<&'a str>);

#[tokio::test]
async fn upload_mistakes_are_4xx_errors_naming_the_field() {
    let dir = temp_dir("mistakes");
    let state = app(&fixture("tiny-base"), &dir);
    keep(&state, &case_voice("taken", "e2e_base_xvec_stream_english", &state.model)).await;
    let clip = wav_clip(1.0, 24_000);
    let long_name = "x".repeat(65);
    let cases: Vec<(Vec<Part>, Expected)> = vec![
        (vec![Part::Text("name", "a"), Part::File("file", &clip)], (400, "invalid_request", Some("file"))),
        (
            vec![Part::Text("voice_name", "a"), Part::File("audio", &clip)],
            (400, "invalid_request", Some("voice_name")),
        ),
        (vec![Part::Text("name", "a")], (400, "invalid_request", Some("audio"))),
        (
            vec![Part::Text("name", "a"), Part::Text("transcript", "Hi.")],
            (400, "invalid_request", Some("audio")),
        ),
        (vec![Part::File("audio", &clip)], (400, "invalid_request", Some("name"))),
        (
            vec![Part::Text("name", "../../etc/passwd"), Part::File("audio", &clip)],
            (400, "invalid_voice_name", Some("name")),
        ),
        (
            vec![Part::Text("name", "a.json"), Part::File("audio", &clip)],
            (400, "invalid_voice_name", Some("name")),
        ),
        (vec![Part::Text("name", ""), Part::File("audio", &clip)], (400, "invalid_voice_name", Some("name"))),
        (
            vec![Part::Text("name", &long_name), Part::File("audio", &clip)],
            (400, "invalid_voice_name", Some("name")),
        ),
        (vec![Part::Text("name", "taken"), Part::File("audio", &clip)], (409, "voice_exists", Some("name"))),
    ];
    for (parts, (status, code, param)) in cases {
        let r = post_multipart(&state, &parts).await;
        assert_eq!(r.error(), (status, code.to_string(), param.map(str::to_string)));
    }
    // Not multipart at all.
    let r = post_json(&state, "/v1/voices", serde_json::json!({"name": "a", "audio": "x"})).await;
    assert_eq!((r.status, r.error().1.as_str()), (400, "invalid_multipart"));
    // Over voices.max_upload_bytes (64 KiB here).
    let big = vec![0u8; 80 * 1024];
    let r = post_multipart(&state, &[Part::Text("name", "big"), Part::File("audio", &big)]).await;
    assert_eq!((r.status, r.error().1.as_str()), (413, "body_too_large"));
    // Nothing was stored besides the voice that was there.
    assert_eq!(stored_names(&state).await, ["taken"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn delete_refuses_paths_and_presets() {
    let outside = temp_dir("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.json"), b"{}").unwrap();
    let dir = outside.join("voices");
    let state = app(&fixture("tiny-base"), &dir);
    keep(&state, &case_voice("keep", "e2e_base_xvec_stream_english", &state.model)).await;
    for uri in [
        "/v1/voices/..%2Fvictim",
        "/v1/voices/%2E%2E%2Fvictim",
        "/v1/voices/..",
        "/v1/voices/keep.json",
        "/v1/voices/a%00b",
        "/v1/voices/%2Ftmp%2Fx",
    ] {
        let r = delete(&state, uri).await;
        assert_eq!(r.error(), (400, "invalid_voice_name".into(), Some("name".into())), "{uri}");
    }
    // `..` as a path segment never reaches the handler with a traversal either.
    let r = delete(&state, "/v1/voices/../victim").await;
    assert!((400..500).contains(&r.status), "{}", r.status);
    assert!(outside.join("victim.json").is_file(), "nothing outside the voice directory was touched");
    assert_eq!(stored_names(&state).await, ["keep"]);
    let cv = app(&fixture("tiny-custom-voice"), &temp_dir("cv-delete"));
    let r = delete(&cv, "/v1/voices/vivian").await;
    assert_eq!(r.error(), (400, "preset_voice".into(), Some("name".into())));
    std::fs::remove_dir_all(outside).unwrap();
}

#[tokio::test]
async fn uploads_to_a_model_without_cloning_are_refused() {
    let state = app(&fixture("tiny-custom-voice"), &temp_dir("cv-upload"));
    let clip = wav_clip(1.0, 24_000);
    let r = post_multipart(&state, &[Part::Text("name", "me"), Part::File("audio", &clip)]).await;
    assert_eq!(r.error(), (400, "cloning_unsupported".into(), Some("audio".into())));
}

#[tokio::test]
async fn a_url_encoded_form_is_a_form_without_its_audio() {
    let state = app(&fixture("tiny-base"), &temp_dir("urlencoded"));
    let req = axum::http::Request::post("/v1/voices")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from("name=alice"))
        .unwrap();
    let r = call(&state, req).await;
    assert_eq!(r.error(), (400, "invalid_multipart".into(), Some("audio".into())));
}

//! `lyre synth` with cloned voices: a stored voice (`--voice` + `--voices-dir`, written here from
//! the fixture's stored encoder outputs, or the voice database), the mistakes that are caught
//! before any encoder, and `lyre voices list|delete|import|tenants`.

use crate::support::*;

fn ref_i64(case: &str, name: &str) -> Vec<i64> {
    let path = fixture("tiny-base").join("refs").join(format!("{case}.safetensors"));
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    bytemuck::pod_collect_to_vec(st.tensor(name).unwrap().data())
}

/// A voice file as `POST /v1/voices` stores it, from a case's `ref_spk_embedding`/`ref_code`.
fn write_voice(dir: &std::path::Path, name: &str, case: &str) {
    let codes: Vec<Vec<i64>> = ref_i64(case, "ref_code").chunks(16).map(<[i64]>::to_vec).collect();
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("tiny-base").join("config.json")).unwrap()).unwrap();
    let voice = serde_json::json!({
        "lyre_voice": 1,
        "name": name,
        "model": {
            "type": cfg["tts_model_type"],
            "size": cfg["tts_model_size"],
            "hidden_size": cfg["talker_config"]["hidden_size"],
        },
        "x_vector": ref_f32("tiny-base", case, "ref_spk_embedding"),
        "ref_text": "Okay. Yeah.",
        "ref_codes": codes,
        "seconds": 1.04,
        "created_unix_s": 0,
    });
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&voice).unwrap()).unwrap();
}

#[test]
fn synth_with_a_stored_icl_voice_reproduces_the_streaming_reference() {
    let dir = temp("voices");
    write_voice(&dir, "okay", "e2e_base_icl_stream_english");
    let out = temp("icl.json");
    let model = fixture("tiny-base");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hello world, this is a test.",
        "--voice",
        "okay",
        "--voices-dir",
        dir.to_str().unwrap(),
        "--language",
        "english",
        "--streaming-text",
        "--greedy",
        "--max-frames",
        "11",
        "--codes-out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read_codes(&out), ref_codes("tiny-base", "e2e_base_icl_stream_english"));
    std::fs::remove_file(out).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn synth_names_cloning_mistakes() {
    let base = fixture("tiny-base");
    let cv = fixture("tiny-custom-voice");
    let run = |model: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "synth",
            "--model-dir",
            model.to_str().unwrap(),
            "--text",
            "Hi.",
            "--codes-out",
            "/dev/null",
        ];
        args.extend_from_slice(extra);
        let o = lyre(&args);
        assert!(!o.status.success(), "{extra:?}");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let err = run(&base, &[]);
    assert!(err.contains("reference audio"), "{err}");
    let err = run(&base, &["--voice", "nobody", "--voices-dir", "/nonexistent/voices"]);
    assert!(err.contains("nobody") && err.contains("/nonexistent/voices"), "{err}");
    let err = run(&cv, &["--ref-audio", "/dev/null"]);
    assert!(err.contains("--ref-audio") && err.contains("custom_voice"), "{err}");
    let err = run(&base, &["--ref-text", "Okay."]);
    assert!(err.contains("--ref-audio"), "{err}");
    let err = run(&base, &["--ref-audio", "/nonexistent/clip.wav"]);
    assert!(err.contains("/nonexistent/clip.wav"), "{err}");
}

/// Without --voices-dir, `--voice` reads the server's voice database, into which the voice files
/// of `voices.dir` (here from LYRE_VOICES_DIR) are imported as `lyre serve` would.
#[test]
fn synth_finds_stored_voices_through_the_config() {
    let dir = temp("voices-env");
    write_voice(&dir, "okay", "e2e_base_icl_stream_english");
    let out = temp("icl-env.json");
    let model = fixture("tiny-base");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lyre"))
        .env("LYRE_VOICES_DIR", &dir)
        .env_remove("LYRE_CONFIG")
        .args([
            "synth",
            "--model-dir",
            model.to_str().unwrap(),
            "--text",
            "Hello world, this is a test.",
            "--voice",
            "okay",
            "--language",
            "english",
            "--streaming-text",
            "--greedy",
            "--max-frames",
            "11",
            "--codes-out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read_codes(&out), ref_codes("tiny-base", "e2e_base_icl_stream_english"));
    std::fs::remove_file(out).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

/// `lyre voices ...` with a clean environment and the given variables.
fn voices_cmd(env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lyre"));
    cmd.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).arg("voices").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn operators_list_import_and_delete_voices_per_tenant() {
    let files = temp("voice-files");
    write_voice(&files, "okay", "e2e_base_icl_stream_english");
    write_voice(&files, "other", "e2e_base_icl_stream_english");
    let db = temp("voices-db");
    let url = format!("sqlite://{}/voices.db", db.display());
    let dir = temp("voices-dir-empty");
    let base: Vec<(&str, &str)> = vec![("LYRE_VOICES_DIR", dir.to_str().unwrap())];
    let tenants =
        [base.clone(), vec![("LYRE_AUTH_TENANTS", "acme: acme-key-0001; beta: beta-key-0001")]].concat();

    // Several tenants: an import must name one.
    let o = voices_cmd(&tenants, &["--database", &url, "import", files.to_str().unwrap()]);
    assert!(!o.status.success() && text(&o).contains("--tenant"), "{}", text(&o));
    let o =
        voices_cmd(&tenants, &["--database", &url, "import", files.to_str().unwrap(), "--tenant", "acme"]);
    assert!(o.status.success() && text(&o).contains("2 imported"), "{}", text(&o));
    let o =
        voices_cmd(&tenants, &["--database", &url, "import", files.to_str().unwrap(), "--tenant", "acme"]);
    assert!(text(&o).contains("0 imported, 2 imported before"), "once: {}", text(&o));
    let o =
        voices_cmd(&tenants, &["--database", &url, "import", files.to_str().unwrap(), "--tenant", "beta"]);
    assert!(text(&o).contains("2 imported"), "{}", text(&o));

    let o = voices_cmd(&tenants, &["--database", &url, "list"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<Vec<&str>> = out.lines().skip(1).map(|l| l.split_whitespace().take(2).collect()).collect();
    assert_eq!(rows, [["acme", "okay"], ["acme", "other"], ["beta", "okay"], ["beta", "other"]], "{out}");
    let o = voices_cmd(&tenants, &["--database", &url, "delete", "okay", "--tenant", "beta"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = voices_cmd(&tenants, &["--database", &url, "delete", "okay", "--tenant", "beta"]);
    assert!(!o.status.success() && text(&o).contains("no voice `okay`"), "{}", text(&o));
    let o = voices_cmd(&tenants, &["--database", &url, "list", "--tenant", "beta"]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(out.lines().count(), 2, "a header and beta's `other`: {out}");
    assert!(out.contains("other") && !out.contains("acme"), "{out}");

    // The tenants, never the keys.
    let keys = [tenants.clone(), vec![("LYRE_AUTH_API_KEYS", "solo-key-1234")]].concat();
    let o = voices_cmd(&keys, &["tenants"]);
    let out = text(&o);
    assert!(
        o.status.success() && out.contains("acme\t1 key(s)") && out.contains("key-645339ae2a821c63"),
        "{out}"
    );
    assert!(!out.contains("acme-key-0001") && !out.contains("solo-key-1234"), "{out}");
    // One tenant (no keys): it is the default.
    let o = voices_cmd(&base, &["--database", &url, "import", files.to_str().unwrap()]);
    assert!(text(&o).contains("tenant `default`: 2 imported"), "{}", text(&o));
    let o = voices_cmd(&base, &["--database", "mysql://x@y/z", "list"]);
    assert!(!o.status.success() && text(&o).contains("voices.database"), "{}", text(&o));
    for d in [files, db, dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

use crate::support::*;

#[test]
fn synth_reproduces_the_streaming_reference() {
    let out = temp("ryan.json");
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hello world, this is a test.",
        "--voice",
        "ryan",
        "--language",
        "auto",
        "--streaming-text",
        "--greedy",
        "--max-frames",
        "11",
        "--codes-out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read_codes(&out), ref_codes("tiny-custom-voice", "e2e_cv_stream_auto_ryan"));
    std::fs::remove_file(out).unwrap();
}

#[test]
fn synth_stops_at_eos_in_non_streaming_mode() {
    let out = temp("vivian.json");
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth", "--model-dir", model.to_str().unwrap(), "--text", "Hello world, this is a test.", "--voice",
        "Vivian", "--language", "english", "--greedy", "--codes-out", out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let codes = read_codes(&out);
    assert_eq!(codes, ref_codes("tiny-custom-voice", "e2e_cv_nonstream_english_vivian"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Eos"));
    std::fs::remove_file(out).unwrap();
}

#[test]
fn synth_rejects_instruct_on_the_small_custom_voice_model() {
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth", "--model-dir", model.to_str().unwrap(), "--text", "Hi.", "--voice", "serena", "--instruct",
        "Speak slowly.", "--codes-out", "/dev/null",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("instruct") && err.contains("0.6B"), "{err}");
}

#[test]
fn synth_names_an_unknown_voice_and_lists_the_valid_ones() {
    let model = fixture("tiny-custom-voice");
    let o = lyre(&["synth", "--model-dir", model.to_str().unwrap(), "--text", "Hi.", "--voice", "zed", "--codes-out", "/dev/null"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("zed") && err.contains("vivian") && err.contains("ryan"), "{err}");
}

#[test]
fn synth_names_a_missing_checkpoint_file() {
    let o = lyre(&["synth", "--model-dir", "/nonexistent/model", "--text", "Hi.", "--codes-out", "/dev/null"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/model"));
}

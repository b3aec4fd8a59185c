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
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hello world, this is a test.",
        "--voice",
        "Vivian",
        "--language",
        "english",
        "--greedy",
        "--codes-out",
        out.to_str().unwrap(),
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
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hi.",
        "--voice",
        "serena",
        "--instruct",
        "Speak slowly.",
        "--codes-out",
        "/dev/null",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("instruct") && err.contains("0.6B"), "{err}");
}

#[test]
fn synth_names_an_unknown_voice_and_lists_the_valid_ones() {
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hi.",
        "--voice",
        "zed",
        "--codes-out",
        "/dev/null",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("zed") && err.contains("vivian") && err.contains("ryan"), "{err}");
}

#[test]
fn synth_names_a_missing_checkpoint_file() {
    let o =
        lyre(&["synth", "--model-dir", "/nonexistent/model", "--text", "Hi.", "--codes-out", "/dev/null"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/model"));
}

#[test]
fn synth_writes_a_24khz_mono_16bit_wav_that_sox_reads() {
    let out = temp("vivian.wav");
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text",
        "Hello world, this is a test.",
        "--voice",
        "vivian",
        "--language",
        "english",
        "--greedy",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let info = |flag: &str| {
        let o = std::process::Command::new("sox")
            .args(["--i", flag, out.to_str().unwrap()])
            .output()
            .expect("sox (apt-get install sox)");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(info("-r"), "24000");
    assert_eq!(info("-c"), "1");
    assert_eq!(info("-b"), "16");
    assert_eq!(info("-s"), (8 * 1920).to_string());
    std::fs::remove_file(out).unwrap();
}

#[test]
fn synth_decodes_given_codes_to_the_reference_waveform() {
    let case = "e2e_cv_stream_auto_ryan";
    let codes = ref_codes("tiny-custom-voice", case);
    let codes_path = temp("ryan-codes.json");
    std::fs::write(&codes_path, serde_json::to_vec(&serde_json::json!({ "codes": codes })).unwrap()).unwrap();
    let out = temp("ryan.wav");
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--codes-in",
        codes_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let wav = std::fs::read(&out).unwrap();
    let got: Vec<i16> = wav[44..].chunks(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
    let want = ref_f32("tiny-custom-voice", case, "wav");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        let w = (w.clamp(-1.0, 1.0) * 32767.0).round() as i32;
        assert!((*g as i32 - w).abs() <= 1, "sample {g} vs reference {w}");
    }
    std::fs::remove_file(out).unwrap();
    std::fs::remove_file(codes_path).unwrap();
}

#[test]
fn synth_speaks_a_text_file_in_segments_with_progress() {
    let text = temp("chapter.txt");
    let sentence = "Hello world, this is a test.";
    std::fs::write(&text, [sentence; 6].join(" ")).unwrap();
    let (out, codes) = (temp("chapter.flac"), temp("chapter.json"));
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "synth",
        "--model-dir",
        model.to_str().unwrap(),
        "--text-file",
        text.to_str().unwrap(),
        "--voice",
        "vivian",
        "--language",
        "english",
        "--greedy",
        // A small cache, so each sentence is a segment of its own.
        "--max-positions",
        "128",
        "--out",
        out.to_str().unwrap(),
        "--codes-out",
        codes.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    for i in 1..=6 {
        assert!(err.contains(&format!("segment {i}/6: ")), "progress of segment {i}: {err}");
    }
    assert!(err.contains("real time") && err.contains("left") && err.contains("in 6 segments"), "{err}");
    // Each sentence is spoken as alone (the official reference), and the file holds exactly
    // the frames generated.
    let codes = read_codes(&codes);
    let sentence = ref_codes("tiny-custom-voice", "e2e_cv_nonstream_english_vivian");
    assert_eq!(codes, std::iter::repeat_n(sentence, 6).flatten().collect::<Vec<_>>());
    let mut flac = claxon::FlacReader::open(&out).unwrap();
    assert_eq!(flac.streaminfo().sample_rate, 24_000);
    assert_eq!(flac.streaminfo().samples, Some(codes.len() as u64 * 1920));
    assert_eq!(flac.samples().count(), codes.len() * 1920);
    for p in [text, out, temp("chapter.json")] {
        std::fs::remove_file(p).unwrap();
    }
}

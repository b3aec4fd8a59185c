//! The ECAPA-TDNN speaker encoder against `tiny-base/refs/speaker_encoder.safetensors` (the
//! official `mel_spectrogram` and `extract_speaker_embedding` in f32) and the x-vector stored
//! with the Base x-vector end-to-end case.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lyre_engine::checkpoint::config::SpeakerEncoderConfig;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::speaker_encoder::SpeakerEncoder;
use lyre_engine::EngineError;
use safetensors::tensor::TensorView;
use safetensors::SafeTensors;

use crate::support::{cosine, fixture, max_abs, max_diff, ref_f32};

fn encoder() -> SpeakerEncoder {
    let model = ModelDir::open(fixture("tiny-base")).expect("tiny-base loads");
    SpeakerEncoder::load(&model).expect("speaker encoder loads")
}

#[test]
fn log_mel_matches_the_reference() {
    let wav = ref_f32("tiny-base", "speaker_encoder", "wav");
    let want = ref_f32("tiny-base", "speaker_encoder", "mels");
    let mel = encoder().log_mel(&wav).unwrap();
    assert_eq!(mel.frames, 97);
    let diff = max_diff(&mel.data, &want);
    let scale = max_abs(&want);
    eprintln!("log-mel: max |Δ| {diff:.3e}, scale {scale:.2}");
    assert!(diff <= 1e-5 * scale.max(1.0), "log-mel max |Δ| {diff} (scale {scale})");
}

#[test]
fn embedding_matches_the_reference() {
    let enc = encoder();
    let wav = ref_f32("tiny-base", "speaker_encoder", "wav");
    let want = ref_f32("tiny-base", "speaker_encoder", "embedding");
    let start = Instant::now();
    let got = enc.embed(&wav).unwrap();
    eprintln!("tiny encoder: embed of {:.2} s took {:?}", wav.len() as f32 / 24_000.0, start.elapsed());
    assert_eq!(got.len(), 64);
    assert_eq!(enc.dim(), 64);
    let (cos, diff, scale) = (cosine(&got, &want), max_diff(&got, &want), max_abs(&want));
    eprintln!("x-vector: cosine {cos:.8}, max |Δ| {diff:.3e}, scale {scale:.3}");
    assert!(cos >= 0.99999, "cosine {cos}");
    assert!(diff <= 1e-5 * scale.max(1.0), "max |Δ| {diff}");

    // The network alone, fed the reference log-mel.
    let mels = ref_f32("tiny-base", "speaker_encoder", "mels");
    let from_ref_mel =
        enc.embed_mel(&lyre_engine::speaker_encoder::LogMel { frames: 97, data: mels }).unwrap();
    assert!(max_diff(&from_ref_mel, &want) <= 1e-5 * scale.max(1.0));
}

#[test]
fn embedding_equals_the_e2e_prompt_x_vectors() {
    // make_tiny.py feeds one reference clip to the speech encoder, the speaker encoder and the
    // three voice-clone cases; check that, then the x-vector each case put in its prompt.
    let wav = ref_f32("tiny-base", "speaker_encoder", "wav");
    assert_eq!(wav, ref_f32("tiny-base", "speech_encoder", "wav"));
    let got = encoder().embed(&wav).unwrap();
    for case in ["e2e_base_xvec_stream_english", "e2e_base_icl_stream_english", "e2e_base_icl_nonstream_auto"]
    {
        let want = ref_f32("tiny-base", case, "ref_spk_embedding");
        let (cos, diff, scale) = (cosine(&got, &want), max_diff(&got, &want), max_abs(&want));
        eprintln!("{case}: cosine {cos:.8}, max |Δ| {diff:.3e}, scale {scale:.3}");
        assert!(cos >= 0.99999 && diff <= 1e-5 * scale.max(1.0), "{case}: cosine {cos}, max |Δ| {diff}");
    }
}

/// A copy of tiny-base whose `model.safetensors` went through `edit`; the other files linked.
fn broken_tiny_base(tag: &str, edit: impl FnOnce(&mut Vec<(String, TensorView<'_>)>)) -> PathBuf {
    let src = fixture("tiny-base");
    let dir = std::env::temp_dir().join(format!("lyre-voice-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let name = e.unwrap().file_name();
        if name != "model.safetensors" && name != "refs" {
            std::os::unix::fs::symlink(src.join(&name), dir.join(&name)).unwrap();
        }
    }
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<(String, TensorView)> = st.tensors();
    edit(&mut tensors);
    safetensors::serialize_to_file(tensors, None, &dir.join("model.safetensors")).unwrap();
    dir
}

fn load_err(dir: &Path) -> String {
    let err = ModelDir::open(dir).and_then(|m| SpeakerEncoder::load(&m).map(|_| ()));
    let msg = err.expect_err("the broken checkpoint must not load").to_string();
    std::fs::remove_dir_all(dir).unwrap();
    msg
}

#[test]
fn checkpoint_errors_name_the_file_and_tensor() {
    let victim = "speaker_encoder.asp.conv.weight";
    let dir = broken_tiny_base("missing", |t| t.retain(|(n, _)| n != victim));
    let msg = load_err(&dir);
    assert!(msg.contains("model.safetensors") && msg.contains(victim) && msg.contains("missing"), "{msg}");

    // A kernel of the wrong length: the first TDNN's weight cut from k5 to k4.
    let victim = "speaker_encoder.blocks.0.conv.weight";
    let dir = broken_tiny_base("shape", |t| {
        let i = t.iter().position(|(n, _)| n == victim).unwrap();
        let v = &t[i].1;
        let (out, inp, k) = (v.shape()[0], v.shape()[1], v.shape()[2]);
        let bytes = v.data().len() / (out * inp * k) * (out * inp * (k - 1));
        let cut = TensorView::new(v.dtype(), vec![out, inp, k - 1], &v.data()[..bytes]).unwrap();
        t[i].1 = cut;
    });
    let msg = load_err(&dir);
    assert!(msg.contains("model.safetensors") && msg.contains(victim) && msg.contains("shape"), "{msg}");
}

#[test]
fn custom_voice_has_no_speaker_encoder() {
    let model = ModelDir::open(fixture("tiny-custom-voice")).expect("tiny-custom-voice loads");
    match SpeakerEncoder::load(&model) {
        Err(EngineError::ReferenceAudio(msg)) => {
            assert!(msg.contains("Base") && msg.contains("no speaker encoder"), "{msg}")
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("CustomVoice loaded a speaker encoder"),
    }
}

#[test]
fn unusable_clips_are_errors() {
    let enc = encoder();
    for (wav, what) in [(vec![0.1f32; 300], "too short"), (vec![f32::NAN; 24_000], "NaN")] {
        match enc.embed(&wav) {
            Err(EngineError::ReferenceAudio(_)) => {}
            other => panic!("{what}: {other:?}"),
        }
    }
    // Silence is valid input (log clamps at 1e-5) and gives a finite vector.
    assert!(enc.embed(&vec![0.0; 24_000]).unwrap().iter().all(|x| x.is_finite()));
}

/// A 10 s clip through the real 1.7B-size encoder (channels 512/1536, random weights).
/// `cargo test --release -p lyre-engine --test voice -- --ignored --nocapture real_size`
#[test]
#[ignore = "benchmark; run with --release --ignored"]
fn real_size_encoder_10s_benchmark() {
    let cfg = SpeakerEncoderConfig { enc_dim: 2048, ..SpeakerEncoderConfig::default() };
    let enc = SpeakerEncoder::with_random_weights(&cfg, 7).unwrap();
    let wav: Vec<f32> = (0..240_000)
        .map(|i| (0.3 * (i as f32 * 0.07).sin()) + 0.05 * ((i * 7919) % 13) as f32 / 13.0)
        .collect();
    let _ = enc.embed(&wav[..48_000]).unwrap();
    let start = Instant::now();
    let v = enc.embed(&wav).unwrap();
    let elapsed = start.elapsed();
    eprintln!("real-size encoder: 10 s clip in {elapsed:?} ({} values)", v.len());
    assert_eq!(v.len(), 2048);
    assert!(v.iter().all(|x| x.is_finite()));
}

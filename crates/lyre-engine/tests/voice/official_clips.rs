//! Real reference clips against the official `qwen-tts` loader and encoders
//! (`tests/data/official`, made by `scripts/oracle/make_input_refs.py` from espeak-ng speech):
//! 24 kHz clips of 3–60 s, 5 s clips at 8–48 kHz in mono and stereo WAV, FLAC and MP3, and a
//! 3 s Ogg Vorbis clip, each decoded, resampled to 24 kHz and encoded to reference codes and an
//! x-vector.

use std::sync::OnceLock;

use lyre_engine::audio_input::{self, DecodedAudio, ENCODER_SAMPLE_RATE};
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::speaker_encoder::SpeakerEncoder;
use lyre_engine::speech_encoder::SpeechEncoder;

use crate::official::{checksum, clip_bytes, code_agreement, codes, f32s, manifest};
use crate::support::{cosine, fixture, max_abs, max_diff};

struct Encoders {
    speech: SpeechEncoder,
    speaker: SpeakerEncoder,
}

fn encoders() -> &'static Encoders {
    static ENCODERS: OnceLock<Encoders> = OnceLock::new();
    ENCODERS.get_or_init(|| {
        let model = ModelDir::open(fixture("tiny-base")).expect("tiny-base loads");
        Encoders {
            speech: SpeechEncoder::load(&model).expect("speech encoder"),
            speaker: SpeakerEncoder::load(&model).expect("speaker encoder"),
        }
    })
}

fn clip(name: &str) -> &'static serde_json::Value {
    let meta = &manifest()["clips"][name];
    assert!(meta.is_object(), "clip {name} is in the manifest");
    meta
}

/// The x-vector is the official one within `rel` of its scale (max |Δ|) and at least `min_cos`.
fn check_x_vector(name: &str, got: &[f32], min_cos: f64, rel: f32) {
    let want = f32s(&format!("{name}.xvec"));
    let (cos, diff, scale) = (cosine(got, &want), max_diff(got, &want), max_abs(&want));
    println!("{name}: x-vector cosine {cos:.9}, max |Δ| {diff:.2e} ({:.2e} of its scale)", diff / scale);
    assert!(cos >= min_cos, "{name}: x-vector cosine {cos}");
    assert!(diff <= rel * scale, "{name}: x-vector max |Δ| {diff} (scale {scale})");
}

/// Reference codes: the share equal to the official ones must reach `min_equal`.
fn check_codes(name: &str, got: &[[u16; 16]], min_equal: f64) {
    let want = codes(&format!("{name}.codes"));
    let (equal, first) = code_agreement(got, &want);
    println!(
        "{name}: {:.2} % of {} frames' codes equal (first difference: {first:?})",
        100.0 * equal,
        want.len()
    );
    assert!(
        equal >= min_equal,
        "{name}: only {:.3} % of codes equal; first differing frame {first:?}",
        100.0 * equal
    );
}

fn decode(bytes: &[u8]) -> DecodedAudio {
    audio_input::decode(bytes).expect("the clip decodes")
}

/// The samples the official loader decodes and resamples (checked through their checksums).
fn check_samples(name: &str, decoded: &DecodedAudio, resampled: &[f32]) {
    let meta = clip(name);
    assert_eq!(decoded.sample_rate as u64, meta["rate"].as_u64().unwrap(), "{name}: rate");
    assert_eq!(decoded.samples.len() as u64, meta["decoded_len"].as_u64().unwrap(), "{name}: decoded length");
    assert_eq!(resampled.len() as u64, meta["resampled_len"].as_u64().unwrap(), "{name}: 24 kHz length");
    if meta["format"] != "mp3" && meta["format"] != "ogg" {
        assert_eq!(checksum(&decoded.samples), meta["decoded_checksum"], "{name}: decoded samples");
    }
    if cfg!(feature = "soxr") && meta["format"] != "mp3" && meta["format"] != "ogg" {
        assert_eq!(checksum(resampled), meta["resampled_checksum"], "{name}: 24 kHz samples (soxr)");
    }
}

/// Every frame of the reference codes and an x-vector of cosine ≥ 0.999999, for 24 kHz clips of
/// 3, 15, 45 and 60 s (prefixes of one 60 s FLAC): the speech encoder attends over the whole clip.
#[test]
fn clips_at_24_khz_up_to_60_s_give_the_official_codes_and_x_vector() {
    let master = decode(&clip_bytes("clips/speech-24000-mono-60s.flac"));
    let enc = encoders();
    for seconds in [3usize, 15, 45, 60] {
        let name = format!("s24000_{seconds}s");
        let wav = &master.samples[..seconds * 24_000];
        let prefix = DecodedAudio { samples: wav.to_vec(), sample_rate: 24_000 };
        check_samples(&name, &prefix, wav);
        check_codes(&name, &enc.speech.encode(wav).unwrap(), 1.0);
        check_x_vector(&name, &enc.speaker.embed(wav).unwrap(), 0.999_999, 1e-5);
    }
}

/// A WAV file of the FLAC's 16-bit samples, as the generator wrote it for the official loader.
fn wav_from(flac: &DecodedAudio, channels: u16, bytes: &[u8]) -> Vec<u8> {
    let planar = planar_i16(bytes, channels);
    let spec = hound::WavSpec {
        channels,
        sample_rate: flac.sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut cursor = std::io::Cursor::new(Vec::new());
    {
        let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
        for i in 0..planar[0].len() {
            for ch in &planar {
                w.write_sample(ch[i]).unwrap();
            }
        }
        w.finalize().unwrap();
    }
    cursor.into_inner()
}

/// The FLAC's channels as 16-bit integers (claxon, a second decoder, reads them).
fn planar_i16(flac: &[u8], channels: u16) -> Vec<Vec<i16>> {
    let mut reader = claxon::FlacReader::new(std::io::Cursor::new(flac)).unwrap();
    assert_eq!(reader.streaminfo().channels, u32::from(channels));
    assert_eq!(reader.streaminfo().bits_per_sample, 16);
    let mut planar = vec![Vec::new(); channels as usize];
    for (i, s) in reader.samples().enumerate() {
        planar[i % channels as usize].push(s.unwrap() as i16);
    }
    planar
}

/// One 5 s clip at `rate`: FLAC and WAV give the official samples bit for bit, and with them
/// the official codes in every frame and the x-vector within 1e-6 of its scale; the MP3 gives
/// the official length and ≥ 99 % of the codes, the x-vector within 1e-4 of its scale.
fn check_rate(rate: u32) {
    let enc = encoders();
    for (channels, layout) in [(1u16, "mono"), (2, "stereo")] {
        let stem = format!("speech-{rate}-{layout}-5s");
        let flac_name = format!("{stem}.flac");
        let bytes = clip_bytes(&format!("clips/{flac_name}"));
        let flac = decode(&bytes);
        let wav = decode(&wav_from(&flac, channels, &bytes));
        assert_eq!(wav.samples, flac.samples, "{stem}: WAV and FLAC decode to the same samples");
        let resampled = audio_input::resample(&flac, ENCODER_SAMPLE_RATE).unwrap();
        check_samples(&flac_name, &flac, &resampled);
        // libsoxr gives the official samples, so the official codes; without it, ≥ 99 %.
        let (min_equal, rel) = if cfg!(feature = "soxr") { (1.0, 1e-6) } else { (0.99, 1e-4) };
        check_codes(&flac_name, &enc.speech.encode(&resampled).unwrap(), min_equal);
        check_x_vector(&flac_name, &enc.speaker.embed(&resampled).unwrap(), 0.99999, rel);

        let mp3_name = format!("{stem}.mp3");
        let mp3 = decode(&clip_bytes(&format!("clips/{mp3_name}")));
        let resampled = audio_input::resample(&mp3, ENCODER_SAMPLE_RATE).unwrap();
        check_samples(&mp3_name, &mp3, &resampled);
        check_lossy_samples(&mp3_name, &mp3);
        check_codes(&mp3_name, &enc.speech.encode(&resampled).unwrap(), 0.99);
        check_x_vector(&mp3_name, &enc.speaker.embed(&resampled).unwrap(), 0.99999, 1e-4);
    }
}

/// symphonia's MP3 and Vorbis decoders against the official loader's libmpg123 and libvorbis:
/// the same length (delay and padding trimmed alike; checked by `check_samples`) and samples
/// within `LOSSY_TOLERANCE` in the stored windows (the start, where trimming shows, and 2.5 s).
fn check_lossy_samples(name: &str, decoded: &DecodedAudio) {
    let rate = decoded.sample_rate as usize;
    for start in manifest()["lossy_windows"].as_array().unwrap() {
        let want = f32s(&format!("{name}.decoded@{start}"));
        let at = (start.as_f64().unwrap() * rate as f64) as usize;
        let got = &decoded.samples[at..at + want.len()];
        let diff = max_diff(got, &want);
        let rms = (got.iter().zip(&want).map(|(a, b)| f64::from(a - b).powi(2)).sum::<f64>()
            / want.len() as f64)
            .sqrt();
        println!(
            "{name} from {start} s: decoded samples max |Δ| {diff:.2e}, rms {rms:.2e} (peak {:.3})",
            max_abs(&want)
        );
        assert!(diff <= LOSSY_TOLERANCE, "{name} from {start} s: decoded samples differ by {diff}");
    }
}

/// The most a lossy decode may differ from the official one: both decoders are float, and
/// differ in rounding only (measured: 4.4e-7 for MP3, 1.2e-7 for Vorbis).
const LOSSY_TOLERANCE: f32 = 1e-6;

#[test]
fn five_second_clips_at_8_khz() {
    check_rate(8_000);
}

#[test]
fn five_second_clips_at_16_khz() {
    check_rate(16_000);
}

#[test]
fn five_second_clips_at_22_05_khz() {
    check_rate(22_050);
}

#[test]
fn five_second_clips_at_44_1_khz() {
    check_rate(44_100);
}

#[test]
fn five_second_clips_at_48_khz() {
    check_rate(48_000);
}

#[test]
fn ogg_vorbis_clip() {
    let name = "speech-16000-mono-3s.ogg";
    let ogg = decode(&clip_bytes(&format!("clips/{name}")));
    let resampled = audio_input::resample(&ogg, ENCODER_SAMPLE_RATE).unwrap();
    check_samples(name, &ogg, &resampled);
    check_lossy_samples(name, &ogg);
    let enc = encoders();
    check_codes(name, &enc.speech.encode(&resampled).unwrap(), 0.99);
    check_x_vector(name, &enc.speaker.embed(&resampled).unwrap(), 0.99999, 1e-4);
}

/// WAV in every PCM and float sample format, 3 channels, and FLAC at 8, 16 and 24 bits decode to
/// the official loader's samples bit for bit.
#[test]
fn every_pcm_format_decodes_to_the_official_samples() {
    let formats = manifest()["formats"].as_object().unwrap();
    assert_eq!(formats.len(), 10);
    for (name, meta) in formats {
        let audio = decode(&clip_bytes(&format!("clips/{name}")));
        assert_eq!(audio.sample_rate as u64, meta["rate"].as_u64().unwrap(), "{name}");
        assert_eq!(audio.samples.len() as u64, meta["decoded_len"].as_u64().unwrap(), "{name}");
        assert_eq!(checksum(&audio.samples), meta["decoded_checksum"], "{name}: samples");
    }
}

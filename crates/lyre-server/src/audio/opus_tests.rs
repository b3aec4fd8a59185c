//! Tests of the Ogg Opus stream: page structure with the `ogg` reader, and the Debian
//! `opus-tools` (libopus's `opusinfo` and `opusdec`), which must be installed.

use std::io::Cursor;
use std::process::Command;

use super::super::test_util::{snr_db, streamed, sweep, temp_path};
use super::super::{encode_clip, FRAME_SAMPLES, SAMPLE_RATE};
use super::*;

/// Every packet of an Ogg stream, with the flags and granule of its page.
fn packets(bytes: &[u8]) -> Vec<ogg::Packet> {
    let mut reader = ogg::PacketReader::new(Cursor::new(bytes));
    let mut out = Vec::new();
    while let Some(packet) = reader.read_packet().unwrap() {
        out.push(packet);
    }
    out
}

/// Decodes an Ogg Opus stream at 24 kHz as a player does (libopus's `opusdec`: the pre-skip
/// dropped, trimmed to the last granule).
fn decode(bytes: &[u8]) -> Vec<f32> {
    let opus_path = temp_path(&format!("decode-{}.opus", bytes.len()));
    let wav_path = opus_path.with_extension("wav");
    std::fs::write(&opus_path, bytes).unwrap();
    let args = [
        "--quiet".as_ref(),
        "--rate".as_ref(),
        "24000".as_ref(),
        opus_path.as_os_str(),
        wav_path.as_os_str(),
    ];
    run_tool("opusdec", &args);
    let reader = hound::WavReader::open(&wav_path).unwrap();
    assert_eq!((reader.spec().sample_rate, reader.spec().channels), (SAMPLE_RATE, 1));
    let decoded = reader.into_samples::<i16>().map(|s| f32::from(s.unwrap()) / 32768.0).collect();
    std::fs::remove_file(&opus_path).ok();
    std::fs::remove_file(&wav_path).ok();
    decoded
}

/// One Ogg page's header fields, read by hand so that a single output (which need not start the
/// stream) can be checked: (header type flags, granule position, packets completed on it).
fn pages(mut bytes: &[u8]) -> Vec<(u8, u64, usize)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        assert_eq!(&bytes[..4], b"OggS");
        let granule = u64::from_le_bytes(bytes[6..14].try_into().unwrap());
        let lacing = &bytes[27..27 + usize::from(bytes[26])];
        let body: usize = lacing.iter().map(|&l| usize::from(l)).sum();
        out.push((bytes[5], granule, lacing.iter().filter(|&&l| l < 255).count()));
        bytes = &bytes[27 + lacing.len() + body..];
    }
    out
}

const BOS: u8 = 2;
const EOS: u8 = 4;

/// The SNR at the best alignment within ±2 samples: (lag, dB). A 24 kHz libopus encode is
/// delayed 155 samples, one less than its reported lookahead of 156 that sets the pre-skip, so
/// the decoded audio leads the input by one sample (lag -1).
fn aligned_snr(reference: &[f32], decoded: &[f32]) -> (i64, f64) {
    let n = reference.len().min(decoded.len()) - 2;
    (-2i64..=2)
        .map(|lag| {
            let shifted: Vec<f32> = (2..n).map(|i| decoded[(i as i64 + lag) as usize]).collect();
            (lag, snr_db(&reference[2..n], &shifted))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
}

#[test]
fn headers_are_opus_head_and_opus_tags_on_their_own_pages() {
    let bytes = encode_clip(AudioFormat::Opus, &sweep(FRAME_SAMPLES), SAMPLE_RATE).unwrap();
    let packets = packets(&bytes);
    let head = &packets[0].data;
    assert_eq!(&head[..8], b"OpusHead");
    assert_eq!(head.len(), 19);
    assert_eq!((head[8], head[9]), (1, 1), "version, channels");
    assert_eq!(u16::from_le_bytes([head[10], head[11]]), 312, "pre-skip at 48 kHz");
    assert_eq!(u32::from_le_bytes(head[12..16].try_into().unwrap()), SAMPLE_RATE);
    assert_eq!(&head[16..], [0, 0, 0], "gain, mapping family");
    assert_eq!(&packets[1].data[..8], b"OpusTags");
    for p in &packets[..2] {
        assert!(p.first_in_page() && p.last_in_page());
        assert_eq!(p.absgp_page(), 0);
        assert_eq!(p.stream_serial(), SERIAL);
    }
    assert!(packets[0].first_in_stream());
}

#[test]
fn each_frame_is_one_page_of_four_packets_and_finish_ends_the_stream() {
    let samples = sweep(3 * FRAME_SAMPLES);
    let mut stream = OggOpusStream::new(SAMPLE_RATE).unwrap();
    let mut outputs = Vec::new();
    for frame in samples.chunks(FRAME_SAMPLES) {
        outputs.push(pages(&stream.push(frame).unwrap()));
    }
    outputs.push(pages(&stream.finish().unwrap()));

    assert_eq!(outputs[0][..2], [(BOS, 0, 1), (0, 0, 1)], "OpusHead, OpusTags");
    assert_eq!(outputs[0][2..], [(0, 3840, 4)]);
    assert_eq!(outputs[1], [(0, 2 * 3840, 4)]);
    assert_eq!(outputs[2], [(0, 3 * 3840, 4)]);
    // The padded lookahead fills one more packet; its granule trims the padding.
    assert_eq!(outputs[3], [(EOS, 312 + 3 * 3840, 1)]);
}

#[test]
fn page_granules_are_monotone_and_only_the_last_page_ends_the_stream() {
    let bytes = encode_clip(AudioFormat::Opus, &sweep(SAMPLE_RATE as usize), SAMPLE_RATE).unwrap();
    let packets = packets(&bytes);
    let page_ends: Vec<_> = packets.iter().filter(|p| p.last_in_page()).collect();
    assert!(page_ends.windows(2).all(|w| w[0].absgp_page() <= w[1].absgp_page()));
    assert!(page_ends.iter().rev().skip(1).all(|p| !p.last_in_stream()));
    assert!(page_ends.last().unwrap().last_in_stream());
    assert_eq!(page_ends.last().unwrap().absgp_page(), 312 + 48_000);
}

#[test]
fn decodes_to_the_input_length_with_snr_above_10_db() {
    let frames = 12; // 0.96 s
    let samples = sweep(frames * FRAME_SAMPLES);
    let decoded = decode(&encode_clip(AudioFormat::Opus, &samples, SAMPLE_RATE).unwrap());
    assert_eq!(decoded.len(), frames * FRAME_SAMPLES);
    let (lag, snr) = aligned_snr(&samples, &decoded);
    assert!(lag.abs() <= 1 && snr > 10.0, "SNR {snr:.1} dB at lag {lag}");
}

#[test]
fn odd_sized_pushes_decode_to_the_input_length() {
    let samples = sweep(5000);
    let mut stream = OggOpusStream::new(SAMPLE_RATE).unwrap();
    let mut bytes = Vec::new();
    for chunk in samples.chunks(777) {
        bytes.extend(stream.push(chunk).unwrap());
    }
    bytes.extend(stream.finish().unwrap());
    let decoded = decode(&bytes);
    assert_eq!(decoded.len(), samples.len());
    let (lag, snr) = aligned_snr(&samples, &decoded);
    assert!(lag.abs() <= 1 && snr > 10.0, "SNR {snr:.1} dB at lag {lag}");
}

#[test]
fn other_opus_rates_have_the_same_pre_skip_and_a_bad_rate_is_an_error() {
    for rate in [8_000, 16_000, 48_000] {
        let stream = OggOpusStream::new(rate).unwrap();
        assert_eq!(stream.pre_skip(), 312, "{rate} Hz");
    }
    let err = OggOpusStream::new(44_100).err().unwrap();
    assert!(err.to_string().contains("8000, 12000, 16000, 24000 and 48000 Hz"), "{err}");
}

#[test]
fn empty_stream_is_headers_and_one_end_of_stream_page() {
    let packets = packets(&streamed(&mut OggOpusStream::new(SAMPLE_RATE).unwrap(), &[]));
    assert_eq!(packets.len(), 3);
    assert!(packets[2].last_in_stream());
    assert_eq!(packets[2].absgp_page(), 312);
}

/// Runs a Debian `opus-tools` binary; fails, never skips, when it is not installed.
fn run_tool(tool: &str, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("`{tool}` not runnable ({e}): apt-get install -y opus-tools"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{tool} failed: {text}");
    text
}

#[test]
fn opusinfo_accepts_the_stream() {
    let frames = 10;
    let samples = sweep(frames * FRAME_SAMPLES);
    let opus_path = temp_path("tools.opus");
    std::fs::write(&opus_path, encode_clip(AudioFormat::Opus, &samples, SAMPLE_RATE).unwrap()).unwrap();
    let info = run_tool("opusinfo", &[opus_path.as_os_str()]);
    std::fs::remove_file(&opus_path).ok();
    assert!(!info.contains("WARNING") && !info.contains("ERROR"), "{info}");
    assert!(info.contains("Pre-skip: 312"), "{info}");
    assert!(info.contains("Playback length: 0m:00.8"), "{info}");
}

#[test]
fn push_sizes_move_page_boundaries_but_not_packets() {
    let samples = sweep(8 * FRAME_SAMPLES);
    let framed = streamed(&mut OggOpusStream::new(SAMPLE_RATE).unwrap(), &samples);
    let mut stream = OggOpusStream::new(SAMPLE_RATE).unwrap();
    let mut odd = Vec::new();
    for chunk in samples.chunks(1234) {
        odd.extend(stream.push(chunk).unwrap());
    }
    odd.extend(stream.finish().unwrap());
    let data = |bytes: &[u8]| packets(bytes).into_iter().map(|p| p.data).collect::<Vec<_>>();
    assert_eq!(data(&framed), data(&odd));
}

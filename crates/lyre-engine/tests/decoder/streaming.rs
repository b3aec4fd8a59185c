//! Streaming is exact: decoding frame by frame equals decoding several frames per step and the
//! whole clip in one step (where no state is carried), and sessions batched together, started at
//! different ticks and in reused slots, each get what they get alone.

use crate::support::*;

fn speech_decoder_codes(name: &str) -> Vec<[u16; 16]> {
    Refs::open(name, "speech_decoder").frames_codebook_major("codes")
}

#[test]
fn frame_by_frame_equals_chunks_and_the_whole_clip() {
    let ctx = gpu();
    for name in FIXTURES {
        let codes = speech_decoder_codes(name);
        let n = codes.len();
        let clip = |chunk| decoder(&ctx, name, options(1, n, chunk)).decode_clip(&codes).expect("decode");
        let (streamed, whole) = (clip(1), clip(n));
        assert_eq!(streamed.len(), n * 1920);
        assert_close(&format!("{name}: frame by frame vs whole clip in one step"), &streamed, &whole, 1e-5);
        assert_close(&format!("{name}: 7 frames per step vs whole clip"), &clip(7), &whole, 1e-5);
        let wav = Refs::open(name, "speech_decoder").f32("wav");
        assert_close(&format!("{name}: whole clip in one step vs reference"), &whole, &wav, 1e-4);
    }
}

/// One session of the batch test: its slot, the tick it starts at, its codes.
struct Clip {
    slot: u32,
    start: usize,
    codes: Vec<[u16; 16]>,
}

fn batch_clips() -> Vec<Clip> {
    let refs = Refs::open("tiny-custom-voice", "speech_decoder");
    let short = refs.frames_codebook_major("codes");
    let long = refs.frames_codebook_major("codes_long");
    let e2e = Refs::open("tiny-custom-voice", "e2e_cv_stream_auto_ryan").frames("codes");
    vec![
        Clip { slot: 0, start: 0, codes: short[..30].to_vec() },
        Clip { slot: 2, start: 3, codes: e2e },
        Clip { slot: 1, start: 5, codes: long[100..190].to_vec() },
        // Slot 0 again, after the first clip ended and the slot was reset.
        Clip { slot: 0, start: 40, codes: short[50..95].to_vec() },
    ]
}

#[test]
fn batched_sessions_equal_each_session_alone() {
    let ctx = gpu();
    let clips = batch_clips();
    let ticks = clips.iter().map(|c| c.start + c.codes.len()).max().unwrap();
    let mut dec = decoder(&ctx, "tiny-custom-voice", options(3, 128, 1));
    let mut got: Vec<Vec<f32>> = vec![Vec::new(); clips.len()];
    for tick in 0..ticks {
        // Sessions in a different order from their slots, so session index ≠ slot.
        let live: Vec<usize> = (0..clips.len())
            .rev()
            .filter(|&i| (clips[i].start..clips[i].start + clips[i].codes.len()).contains(&tick))
            .collect();
        for &i in &live {
            if tick == clips[i].start {
                dec.reset(clips[i].slot);
            }
        }
        if live.is_empty() {
            continue;
        }
        let step: Vec<(u32, u32, [u16; 16])> = live
            .iter()
            .map(|&i| (clips[i].slot, (tick - clips[i].start) as u32, clips[i].codes[tick - clips[i].start]))
            .collect();
        let pcm = dec.step(&step).expect("step");
        for (&i, samples) in live.iter().zip(pcm) {
            got[i].extend(samples);
        }
    }
    let mut alone = decoder(&ctx, "tiny-custom-voice", options(1, 128, 1));
    for (i, clip) in clips.iter().enumerate() {
        let want = alone.decode_clip(&clip.codes).expect("decode alone");
        assert_close(&format!("session {i} (slot {}) batched vs alone", clip.slot), &got[i], &want, 1e-6);
    }
}

#[test]
fn codes_past_the_codebook_are_clamped_and_bad_steps_rejected() {
    let ctx = gpu();
    let mut codes = speech_decoder_codes("tiny-custom-voice")[..6].to_vec();
    let mut dec = decoder(&ctx, "tiny-custom-voice", options(2, 8, 1));
    codes[3][0] = 2047;
    let clamped_ref = dec.decode_clip(&codes).expect("decode");
    codes[3][0] = 2150; // the EOS id the engine may pass on a frame it discards
    let eos = dec.decode_clip(&codes).expect("decode");
    assert_close("EOS id decodes as the last code", &eos, &clamped_ref, 0.0);
    let frame = codes[0];
    assert!(dec.step(&[]).is_err(), "an empty step");
    assert!(dec.step(&[(2, 0, frame)]).is_err(), "a slot past max_sessions");
    assert!(dec.step(&[(0, 0, frame), (0, 0, frame)]).is_err(), "a slot twice");
    assert!(dec.step(&[(1, 8, frame)]).is_err(), "a frame past max_frames");
    assert!(dec.decode_clip(&[frame; 9]).is_err(), "a clip past max_frames");
}

use crate::e2e::run_alone;
use crate::support::*;

/// Three different cases started together and stepped in one batch: each gets exactly its
/// solo codes.
#[test]
fn batched_sessions_equal_solo_runs() {
    let names = [
        "e2e_cv_nonstream_english_vivian",
        "e2e_cv_stream_auto_ryan",
        "e2e_cv_instruct_english_serena_direct",
    ];
    let mut solo_engine = engine("tiny-custom-voice", 3);
    let solo: Vec<Vec<[u16; 16]>> = names
        .iter()
        .map(|c| {
            let req = case_request("tiny-custom-voice", c, &solo_engine).unwrap();
            run_alone(&mut solo_engine, req).codes
        })
        .collect();
    let mut engine = engine("tiny-custom-voice", 3);
    let ids: Vec<u64> = names
        .iter()
        .map(|c| {
            let req = case_request("tiny-custom-voice", c, &engine).unwrap();
            engine.start(req).unwrap()
        })
        .collect();
    let mut got = vec![Vec::new(); 3];
    let mut max_batch = 0;
    while engine.live_sessions() > 0 {
        let outs = engine.step().unwrap();
        max_batch = max_batch.max(outs.len());
        for o in outs {
            let i = ids.iter().position(|&id| id == o.id).unwrap();
            if let Some(f) = o.frame {
                got[i].push(f.codes);
            }
        }
    }
    assert_eq!(max_batch, 3, "all three stepped together");
    for (i, name) in names.iter().enumerate() {
        assert!(!got[i].is_empty());
        assert_eq!(got[i], solo[i], "{name}: batched codes equal solo codes");
    }
}

/// Voice cloning in a batch: both ICL cases and the x-vector case started together step
/// together and each gets its solo codes and audio (the ICL decoder slots were primed with
/// their reference frames while the x-vector slot was not).
#[test]
fn batched_cloned_voices_equal_solo_runs() {
    let names =
        ["e2e_base_icl_stream_english", "e2e_base_xvec_stream_english", "e2e_base_icl_nonstream_auto"];
    let mut solo_engine = engine("tiny-base", 3);
    let solo: Vec<_> = names
        .iter()
        .map(|c| {
            let req = case_request("tiny-base", c, &solo_engine).unwrap();
            run_alone(&mut solo_engine, req)
        })
        .collect();
    let mut engine = engine("tiny-base", 3);
    let ids: Vec<u64> = names
        .iter()
        .map(|c| {
            let req = case_request("tiny-base", c, &engine).unwrap();
            engine.start(req).unwrap()
        })
        .collect();
    let mut got = vec![(Vec::new(), Vec::new()); 3];
    let mut max_batch = 0;
    while engine.live_sessions() > 0 {
        let outs = engine.step().unwrap();
        max_batch = max_batch.max(outs.len());
        for o in outs {
            let i = ids.iter().position(|&id| id == o.id).unwrap();
            if let Some(f) = o.frame {
                got[i].0.push(f.codes);
                got[i].1.extend(f.pcm);
            }
        }
    }
    assert_eq!(max_batch, 3, "all three stepped together");
    for (i, name) in names.iter().enumerate() {
        assert!(!got[i].0.is_empty());
        assert_eq!(got[i].0, solo[i].codes, "{name}: batched codes equal solo codes");
        let d = got[i].1.iter().zip(&solo[i].pcm).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(d <= 1e-5, "{name}: batched audio differs from solo by {d}");
    }
}

/// A slot reused by a later session starts from clean decoder state: the same request twice
/// on one engine gives the same audio, alone or beside others.
#[test]
fn reused_slots_give_identical_audio() {
    let mut engine = engine("tiny-custom-voice", 2);
    let req = || case_request("tiny-custom-voice", "e2e_cv_stream_auto_ryan", &engine_ref()).unwrap();
    let first = run_alone(&mut engine, req());
    let second = run_alone(&mut engine, req());
    assert_eq!(first.codes, second.codes);
    let d = first.pcm.iter().zip(&second.pcm).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert_eq!(d, 0.0, "audio of a reused slot differs by {d}");
}

fn engine_ref() -> lyre_engine::Engine {
    engine("tiny-custom-voice", 1)
}

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

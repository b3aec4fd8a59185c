use lyre_engine::prompt::PromptRow;

use crate::support::*;

fn check_prompts(fixture_name: &str) -> usize {
    let mut engine = engine(fixture_name, 2);
    let mut checked = 0;
    for case in e2e_cases(fixture_name) {
        let Some(req) = case_request(fixture_name, &case, &engine) else { continue };
        let r = Refs::open(fixture_name, &case);
        let (rows, trailing) = engine.prompt_for(&req).unwrap();
        let got = engine.probe_input_rows(&rows).unwrap();
        assert_matches(&format!("{case} prefill embeddings"), &got, &r.f32("prefill_embeds"), 0.99999, 1e-4);
        // Non-streaming prompts read tts_pad on every frame; the reference stores it as the
        // one trailing row.
        let pad = engine.model().config.tts_pad_token_id;
        let ids = if trailing.is_empty() { vec![pad] } else { trailing };
        let text_only: Vec<PromptRow> = ids
            .iter()
            .map(|&t| PromptRow { text: Some(t), codec: lyre_engine::prompt::CodecPart::None })
            .collect();
        let got = engine.probe_input_rows(&text_only).unwrap();
        assert_matches(&format!("{case} trailing text"), &got, &r.f32("trailing_text_hidden"), 0.99999, 1e-4);
        let pad_row = [PromptRow { text: Some(pad), codec: lyre_engine::prompt::CodecPart::None }];
        let got = engine.probe_input_rows(&pad_row).unwrap();
        assert_matches(&format!("{case} tts_pad embedding"), &got, &r.f32("tts_pad_embed"), 0.99999, 1e-4);
        checked += 1;
    }
    checked
}

#[test]
fn prompt_embeddings_match_every_case() {
    assert_eq!(check_prompts("tiny-custom-voice"), 5, "all five CustomVoice cases");
    assert_eq!(check_prompts("tiny-base"), 3, "the x-vector and both ICL Base cases");
}

#[test]
fn text_projection_matches_reference() {
    let mut engine = engine("tiny-custom-voice", 2);
    let r = Refs::open("tiny-custom-voice", "talker");
    let rows: Vec<PromptRow> = r
        .u32("text_ids")
        .into_iter()
        .map(|t| PromptRow { text: Some(t), codec: lyre_engine::prompt::CodecPart::None })
        .collect();
    let got = engine.probe_input_rows(&rows).unwrap();
    assert_matches("text_projection", &got, &r.f32("text_proj"), 0.99999, 1e-4);
}

/// The reference transcript tokenizes to the stored `ref_ids` (the template's full ids).
#[test]
fn icl_reference_text_ids_match_reference() {
    let engine = engine("tiny-base", 1);
    for case in ["e2e_base_icl_stream_english", "e2e_base_icl_nonstream_auto"] {
        let r = Refs::open("tiny-base", case);
        let text = meta("tiny-base", case)["ref_text"].as_str().unwrap().to_string();
        let ids = engine.model().tokenizer.ref_text_ids(&text).unwrap();
        assert_eq!(ids, r.u32("ref_ids"), "{case}");
    }
}

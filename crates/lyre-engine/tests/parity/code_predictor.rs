use crate::support::*;

fn check_code_predictor(fixture_name: &str) {
    let mut engine = engine(fixture_name, 2);
    let r = Refs::open(fixture_name, "code_predictor");
    let probe = engine.probe_code_predictor(&r.f32("past_hidden"), r.u32("c0")[0]).unwrap();
    let (codes, logits, next) = (probe.codes, probe.logits, probe.frame_embedding);
    assert_eq!(codes, r.u32("codes"), "{fixture_name}: 15 greedy codes");
    let flat: Vec<f32> = logits.into_iter().flatten().collect();
    assert_matches(&format!("{fixture_name} code predictor logits"), &flat, &r.f32("logits"), 0.99999, 1e-4);
    assert_matches(
        &format!("{fixture_name} next input embedding"),
        &next,
        &r.f32("next_input_embed"),
        0.99999,
        1e-5,
    );
}

#[test]
fn code_predictor_matches_reference() {
    check_code_predictor("tiny-custom-voice");
    check_code_predictor("tiny-base");
}

use crate::support::*;

/// A 6-token prefill and three cached single-token steps (refs/talker.safetensors).
fn check_talker(fixture_name: &str) {
    let mut engine = engine(fixture_name, 2);
    let r = Refs::open(fixture_name, "talker");
    let h = r.shape("prefill_embeds")[2];
    let prefill = r.f32("prefill_embeds");
    let steps = r.f32("step_embeds");
    let (mut hidden, mut logits) = engine.probe_talker(1, 0, &prefill).unwrap();
    for (i, step) in steps.chunks(h).enumerate() {
        let (hs, ls) = engine.probe_talker(1, 6 + i as u32, step).unwrap();
        hidden.extend(hs);
        logits.extend(ls);
    }
    assert_matches(&format!("{fixture_name} talker hidden"), &hidden, &r.f32("hidden"), 0.99999, 1e-4);
    assert_matches(&format!("{fixture_name} codec_head logits"), &logits, &r.f32("logits"), 0.99999, 1e-4);
}

#[test]
fn talker_prefill_and_cached_steps_match_reference() {
    check_talker("tiny-custom-voice");
    check_talker("tiny-base");
}

#[test]
fn talker_layer_zero_input_is_the_prefill() {
    // The stored per-layer inputs start with the prefill embeddings; a cheap sanity check
    // that the reference file is the one these tests assume.
    let r = Refs::open("tiny-custom-voice", "talker");
    let layers = r.f32("prefill_layer_inputs");
    let prefill = r.f32("prefill_embeds");
    assert_eq!(&layers[..prefill.len()], &prefill[..]);
}

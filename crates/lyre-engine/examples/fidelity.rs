//! Lyre's side of the real-size fidelity check (scripts/fidelity/run.sh): the official run's
//! prompt, teacher-forced onto the official codes, alone and inside a tick of `--batch` sessions,
//! recording at every frame the talker's final-normed hidden state, its codec-head logits and
//! the code predictor's 15 logit rows; then the same prompt greedily, unforced, for the frame
//! where the codes part ways.
//!
//! ```text
//! cargo run --release --example fidelity -- MODEL_DIR CASE_DIR OUT.safetensors [--kv-cache f16] [--batch 48]
//! ```
//! `CASE_DIR/case.json` is what `scripts/fidelity/official.py` wrote (text, speaker, language,
//! prompt ids, codes). With `FIDELITY_PREFILL=PATH` it writes instead the talker's inputs for
//! the prompt's rows (`PATH`, f32 rows × hidden) and the talker's final-norm hidden state over
//! them (`PATH.hidden`), to compare with the official model's `inputs_embeds` and layers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{Engine, EngineOptions, KvFormat, SessionId, SessionRequest, StepOutput, TextInput};
use safetensors::tensor::{Dtype, TensorView};

/// Other sessions' texts in the batched run (sampled, so they follow their own paths).
const FILLERS: &[&str] = &[
    "Please remember to water the tomatoes while I am away.",
    "The museum is closed on Mondays, but the gardens stay open until sunset.",
    "Your package was delivered this morning and left with the neighbour.",
    "Heavy traffic is expected on the motorway this weekend because of the holiday.",
];

struct Case {
    text: String,
    speaker: String,
    language: String,
    input_ids: Vec<u32>,
    codes: Vec<[u16; 16]>,
}

#[derive(Default)]
struct Trace {
    hidden: Vec<f32>,
    talker: Vec<f32>,
    cp: Vec<f32>,
    codes: Vec<u16>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("fidelity: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let positional: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || !args[i - 1].starts_with("--")))
        .map(|(_, a)| a)
        .collect();
    let [model_dir, case_dir, out] = positional[..] else {
        return Err("usage: fidelity MODEL_DIR CASE_DIR OUT.safetensors [--kv-cache f16] [--batch 48]".into());
    };
    let kv_cache = match flag("--kv-cache").as_deref() {
        None | Some("f32") => KvFormat::F32,
        Some("f16") => KvFormat::F16,
        Some(other) => return Err(format!("--kv-cache {other}: f32 or f16").into()),
    };
    let batch: usize = flag("--batch").map_or(Ok(48), |b| b.parse())?;
    let case = read_case(&PathBuf::from(case_dir).join("case.json"))?;
    let model = Arc::new(ModelDir::open(model_dir)?);
    let ids = model.tokenizer.assistant_text_ids(&case.text)?;
    if ids != case.input_ids {
        return Err(
            format!("prompt ids differ from the official ones:\n{ids:?}\n{:?}", case.input_ids).into()
        );
    }
    let tuning = lyre_engine::EngineTuning::default().with_env(std::env::vars())?;
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    let frames = case.codes.len();
    let opts = EngineOptions {
        max_sessions: batch.max(1),
        max_positions: ids.len() + frames + 64,
        max_rows_per_tick: batch.max(1) * (ids.len() + 64),
        // One utterance, as the official model speaks it: no segment may cut the text.
        segment_tokens: ids.len(),
        capture_logits: true,
        kv_cache,
        tuning,
        ..EngineOptions::default()
    };
    let mut engine = Engine::new(gpu.clone(), model.clone(), opts)?;
    if let Ok(path) = std::env::var("FIDELITY_PREFILL") {
        let req = request(&case, &case.text, SamplingParams::from_generation_config(&model.generation, 0), 1);
        let (rows, _) = engine.prompt_for(&req)?;
        let embeds = engine.probe_input_rows(&rows)?;
        std::fs::write(&path, bytemuck::cast_slice(&embeds))?;
        let (hidden, _) = engine.probe_talker(0, 0, &embeds)?;
        std::fs::write(format!("{path}.hidden"), bytemuck::cast_slice(&hidden))?;
        eprintln!("wrote {} prompt rows' talker inputs to {path}", rows.len());
        return Ok(());
    }
    eprintln!("{} on {}, {kv_cache:?} KV cache, {frames} frames", model.describe(), gpu.info.name);
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    let alone = trace(&mut engine, &case, true, 0)?;
    push(&mut tensors, "alone", &alone, frames, &engine);
    let batched = trace(&mut engine, &case, true, batch.saturating_sub(1))?;
    push(&mut tensors, "batch", &batched, frames, &engine);
    let greedy = trace(&mut engine, &case, false, 0)?;
    tensors.push((
        "greedy_codes".into(),
        vec![frames, 16],
        f32_bytes(&greedy.codes.iter().map(|&c| c as f32).collect::<Vec<_>>()),
    ));
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(n, shape, bytes)| Ok((n.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes)?)))
        .collect::<Result<_, safetensors::SafeTensorError>>()?;
    let info = HashMap::from([
        ("adapter".to_string(), gpu.info.name.clone()),
        ("kv_cache".to_string(), format!("{kv_cache:?}")),
        ("batch".to_string(), batch.to_string()),
    ]);
    safetensors::tensor::serialize_to_file(views, Some(info), out.as_ref())?;
    eprintln!("wrote {out}");
    Ok(())
}

/// One run of the case's prompt (forced onto the official codes or greedy), with `fillers`
/// other sessions started in the same tick; the case's session is traced.
fn trace(
    engine: &mut Engine,
    case: &Case,
    forced: bool,
    fillers: usize,
) -> Result<Trace, Box<dyn std::error::Error>> {
    let frames = case.codes.len() as u32;
    let greedy = SamplingParams {
        ignore_eos: true,
        ..SamplingParams::from_generation_config(&engine.model().generation, 0).greedy()
    };
    let target = engine.start(request(case, &case.text, greedy, frames))?;
    if forced {
        engine.force_codes(target, case.codes.clone())?;
    }
    let mut others: Vec<SessionId> = Vec::new();
    for i in 0..fillers {
        let sampled = SamplingParams {
            ignore_eos: true,
            ..SamplingParams::from_generation_config(&engine.model().generation, 1000 + i as u64)
        };
        others.push(engine.start(request(case, FILLERS[i % FILLERS.len()], sampled, frames + 8))?);
    }
    let mut t = Trace::default();
    loop {
        let outs: Vec<StepOutput> = engine.step()?;
        let Some(o) = outs.into_iter().find(|o| o.id == target) else { continue };
        if let (Some(f), Some(l)) = (o.frame, o.logits) {
            t.hidden.extend(l.talker_hidden);
            t.talker.extend(l.talker);
            t.cp.extend(l.code_predictor.into_iter().flatten());
            t.codes.extend(f.codes);
        }
        if o.finished.is_some() {
            break;
        }
    }
    for id in others {
        engine.cancel(id);
    }
    Ok(t)
}

fn request(case: &Case, text: &str, sampling: SamplingParams, max_frames: u32) -> SessionRequest {
    SessionRequest {
        text: TextInput::Whole(text.to_string()),
        voice: VoiceSpec::Speaker(case.speaker.clone()),
        language: case.language.clone(),
        instruct: None,
        mode: TextMode::NonStreaming,
        sampling,
        max_frames,
        max_frames_per_segment: Some(max_frames),
    }
}

fn push(
    out: &mut Vec<(String, Vec<usize>, Vec<u8>)>,
    prefix: &str,
    t: &Trace,
    frames: usize,
    engine: &Engine,
) {
    let h = engine.model().config.talker_config.hidden_size;
    let v = t.talker.len() / frames.max(1);
    out.push((format!("{prefix}_talker_hidden"), vec![frames, h], f32_bytes(&t.hidden)));
    out.push((format!("{prefix}_talker_logits"), vec![frames, v], f32_bytes(&t.talker)));
    out.push((
        format!("{prefix}_cp_logits"),
        vec![frames * 15, t.cp.len() / (frames * 15).max(1)],
        f32_bytes(&t.cp),
    ));
    out.push((
        format!("{prefix}_codes"),
        vec![frames, 16],
        f32_bytes(&t.codes.iter().map(|&c| c as f32).collect::<Vec<_>>()),
    ));
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

fn read_case(path: &std::path::Path) -> Result<Case, Box<dyn std::error::Error>> {
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let s = |k: &str| j[k].as_str().map(str::to_string).ok_or(format!("case.json: no {k}"));
    let codes = j["codes"]
        .as_array()
        .ok_or("case.json: no codes")?
        .iter()
        .map(|row| {
            let r: Vec<u16> =
                row.as_array().into_iter().flatten().filter_map(|c| c.as_u64()).map(|c| c as u16).collect();
            <[u16; 16]>::try_from(r).map_err(|_| "case.json: a frame without 16 codes")
        })
        .collect::<Result<Vec<_>, _>>()?;
    let input_ids = j["input_ids"]
        .as_array()
        .ok_or("case.json: no input_ids")?
        .iter()
        .filter_map(|v| v.as_u64())
        .map(|v| v as u32)
        .collect();
    Ok(Case { text: s("text")?, speaker: s("speaker")?, language: s("language")?, input_ids, codes })
}

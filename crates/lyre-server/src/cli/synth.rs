//! `lyre synth`: one clip, start to end, with the same engine the server uses. A long text
//! (`--text-file`, a chapter or a book) is spoken in segments with a progress bar, and its
//! audio is written to the file as it is generated.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::Args;
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::codec::StandaloneDecoder;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::policy::{check_voice_and_instruct, default_max_frames};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::{SamplingOverrides, SamplingParams};
use lyre_engine::{Engine, EngineOptions, FinishReason, SessionRequest, TextInput};

use super::synth_progress::Progress;
use crate::audio::{AudioFormat, FileWriter, SAMPLE_RATE};
use crate::config::ServerConfig;
use crate::voices::Encoders;

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Checkpoint directory in the Hugging Face layout.
    #[arg(long)]
    pub model_dir: PathBuf,
    /// The text to speak (not needed with --codes-in).
    #[arg(long, required_unless_present_any = ["codes_in", "text_file"], conflicts_with = "text_file")]
    pub text: Option<String>,
    /// Read the text to speak from this UTF-8 file (any length: a long text is spoken in
    /// segments, with a progress bar).
    #[arg(long)]
    pub text_file: Option<PathBuf>,
    /// Preset speaker (CustomVoice models) or stored cloned voice (Base models, see
    /// --voices-dir).
    #[arg(long)]
    pub voice: Option<String>,
    /// Clone the voice of this clip (Base models): WAV (16-bit or 32-bit float), FLAC, MP3 or
    /// Ogg, any sample rate.
    #[arg(long, conflicts_with = "voice")]
    pub ref_audio: Option<PathBuf>,
    /// The transcript of --ref-audio: in-context cloning (ICL) when given, x-vector only when not.
    #[arg(long, requires = "ref_audio")]
    pub ref_text: Option<String>,
    /// A directory of voice files (`NAME.json`) for --voice on a Base model. Default: the voice
    /// database of --config (or LYRE_CONFIG) with LYRE_* overrides, as `lyre serve` reads it.
    #[arg(long)]
    pub voices_dir: Option<PathBuf>,
    /// The tenant whose stored voice --voice names (default: the configuration's only tenant).
    #[arg(long, conflicts_with = "voices_dir")]
    pub tenant: Option<String>,
    /// The server's TOML config (with LYRE_* overrides): its `[engine.tuning]`, and the voice
    /// database when --voices-dir is not given.
    #[arg(long, env = "LYRE_CONFIG")]
    pub config: Option<PathBuf>,
    /// `auto` or a language the model knows.
    #[arg(long, default_value = "auto")]
    pub language: String,
    /// Style instruction (1.7B CustomVoice) or voice description (VoiceDesign).
    #[arg(long)]
    pub instruct: Option<String>,
    /// Feed the text one token per frame (as a live stream would) instead of all in the prompt.
    #[arg(long)]
    pub streaming_text: bool,
    /// Greedy decoding for both the talker and the code predictor.
    #[arg(long)]
    pub greedy: bool,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub temperature: Option<f32>,
    #[arg(long)]
    pub top_k: Option<u32>,
    #[arg(long)]
    pub top_p: Option<f32>,
    #[arg(long)]
    pub repetition_penalty: Option<f32>,
    /// Emit at most this many 80 ms frames in all (each segment is also held to 5 s plus 1 s
    /// per text token).
    #[arg(long)]
    pub max_frames: Option<u32>,
    /// KV-cache positions: a text longer than one segment for this cache is spoken in segments.
    #[arg(long, default_value_t = 4096)]
    pub max_positions: usize,
    /// Never stop at the end-of-speech token (always emit --max-frames frames).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Write the codes as JSON: {"codes": [[c0, ..., c15], ...]}.
    #[arg(long)]
    pub codes_out: Option<PathBuf>,
    /// Write the audio (24 kHz mono) to this file, frame by frame as it is generated.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The format of --out: wav, pcm, opus, mp3 or flac (default: from its extension, else wav).
    #[arg(long)]
    pub format: Option<AudioFormat>,
    /// Decode these codes ({"codes": [[16 ints], ...]}) instead of running the talker.
    #[arg(long, conflicts_with_all = ["text", "text_file", "voice", "instruct", "codes_out", "ref_audio"])]
    pub codes_in: Option<PathBuf>,
}

pub fn run(args: SynthArgs) -> anyhow::Result<()> {
    if args.codes_out.is_none() && args.out.is_none() {
        bail!("nothing to write: give --out FILE and/or --codes-out FILE.json");
    }
    let format = output_format(&args);
    let model = Arc::new(ModelDir::open(&args.model_dir)?);
    // The configuration's [engine.tuning] (and LYRE_ENGINE_TUNING_* variables), as `serve` runs.
    let tuning = ServerConfig::load(args.config.as_deref(), std::env::vars())?.engine.tuning;
    if let Some(codes_in) = &args.codes_in {
        return decode_codes(&model, codes_in, args.out.as_deref(), format, &tuning);
    }
    let text = match &args.text_file {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        None => args.text.clone().unwrap_or_default(),
    };
    let voice = voice(&args, &model)?;
    check_voice_and_instruct(&model.config, &voice, args.instruct.as_deref())?;
    let sampling = sampling(&args, &model);
    sampling.validate()?;
    let text_tokens = model.tokenizer.assistant_text_ids(&text)?.len().saturating_sub(8);
    let max_frames = args.max_frames.unwrap_or(u32::MAX);
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    eprintln!("{} on {} ({:?})", model.describe(), gpu.info.name, gpu.info.backend);
    let reference = voice.reference().map_or(0, |r| r.codes.len() + r.text.len());
    let prompt_budget = 64 + args.instruct.as_ref().map_or(0, |s| s.len()) + reference;
    // A short text gets a cache just large enough for it; a long one is spoken in segments.
    let frames = default_max_frames(text_tokens, &model.generation).min(max_frames) as usize;
    let max_positions = args.max_positions.min(prompt_budget + text_tokens + frames + 2).max(64);
    let opts = EngineOptions {
        max_sessions: 1,
        max_positions,
        max_rows_per_tick: (prompt_budget + text_tokens).min(max_positions),
        segment_tokens: 0,
        kv_cache: lyre_engine::KvFormat::F32,
        capture_logits: false,
        profile: false,
        profile_dispatches: false,
        inject_grid_fault: false,
        tuning,
    };
    let mut engine = Engine::new(gpu, model, opts)?;
    let mode = if args.streaming_text { TextMode::Streaming } else { TextMode::NonStreaming };
    let mut req = SessionRequest {
        text: TextInput::Whole(text),
        voice,
        language: args.language.clone(),
        instruct: args.instruct.clone(),
        mode,
        sampling,
        max_frames,
        max_frames_per_segment: None,
    };
    let segments = engine.segments(&req)?;
    let n = segments.len();
    req.text = TextInput::Segments(segments);
    let mut out = match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
            Some((path, FileWriter::new(format, SAMPLE_RATE, BufWriter::new(file))?))
        }
        None => None,
    };
    let mut progress = Progress::new(n);
    let (codes, reason) = generate(&mut engine, req, &mut progress, |pcm| match out.as_mut() {
        Some((path, w)) => w.push(pcm).with_context(|| format!("writing {}", path.display())),
        None => Ok(()),
    })?;
    progress.finish();
    if let Some((path, w)) = out {
        w.finish().with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.codes_out {
        let json = serde_json::json!({ "codes": codes });
        std::fs::write(path, serde_json::to_vec(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "{} frames ({:.2} s of audio) in {n} segment{}, finished: {reason:?}",
        codes.len(),
        codes.len() as f64 * 0.08,
        if n == 1 { "" } else { "s" }
    );
    Ok(())
}

/// `--format`, else the format --out's extension names, else WAV.
fn output_format(args: &SynthArgs) -> AudioFormat {
    if let Some(f) = args.format {
        return f;
    }
    let ext = args.out.as_deref().and_then(Path::extension).and_then(|e| e.to_str()).unwrap_or("wav");
    match ext.to_ascii_lowercase().as_str() {
        "ogg" | "oga" => AudioFormat::Opus,
        "raw" | "s16" => AudioFormat::Pcm,
        other => other.parse().unwrap_or(AudioFormat::Wav),
    }
}

/// `--ref-audio` (run the encoders), `--voice` (a stored voice on a Base model, else a preset
/// speaker), or none.
fn voice(args: &SynthArgs, model: &Arc<ModelDir>) -> anyhow::Result<VoiceSpec> {
    if let Some(path) = &args.ref_audio {
        if let Some(f) = Encoders::refusal(model) {
            bail!("--ref-audio: {}", f.message);
        }
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let text = args.ref_text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let cloned = Encoders::new(model.clone())
            .clone_voice(&bytes, text)
            .with_context(|| format!("--ref-audio {}", path.display()))?;
        eprintln!(
            "cloned the voice of {} ({:.2} s, {})",
            path.display(),
            cloned.seconds,
            if cloned.reference.is_some() { "in-context" } else { "x-vector only" }
        );
        return Ok(match cloned.reference {
            Some(reference) => VoiceSpec::Icl { x_vector: cloned.x_vector, reference },
            None => VoiceSpec::Vector(cloned.x_vector),
        });
    }
    match (&args.voice, model.config.tts_model_type) {
        (Some(name), ModelType::Base) => {
            let stored = super::voices::find_voice(
                args.voices_dir.as_deref(),
                args.config.as_deref(),
                args.tenant.as_deref(),
                name.trim(),
            )?;
            stored.voice_spec(&model.config, "voice").map_err(|f| anyhow::anyhow!("--voice: {}", f.message))
        }
        (Some(v), _) => Ok(VoiceSpec::Speaker(v.clone())),
        (None, _) => Ok(VoiceSpec::None),
    }
}

fn sampling(args: &SynthArgs, model: &ModelDir) -> SamplingParams {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    let overrides = SamplingOverrides {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        repetition_penalty: args.repetition_penalty,
        greedy: args.greedy,
        ignore_eos: args.ignore_eos,
    };
    SamplingParams::from_generation_config(&model.generation, seed).with_overrides(&overrides)
}

/// Steps the engine until the session ends, handing each frame's samples to `sink` and its
/// progress to `progress`; returns the codes and why it ended.
fn generate(
    engine: &mut Engine,
    req: SessionRequest,
    progress: &mut Progress,
    mut sink: impl FnMut(&[f32]) -> anyhow::Result<()>,
) -> anyhow::Result<(Vec<[u16; 16]>, FinishReason)> {
    let id = engine.start(req)?;
    let mut codes = Vec::new();
    loop {
        for out in engine.step()? {
            if out.id != id {
                continue;
            }
            if let Some(f) = out.frame {
                codes.push(f.codes);
                sink(&f.pcm)?;
                progress.frame(f.segment);
            }
            if let Some(reason) = out.finished {
                return Ok((codes, reason));
            }
        }
    }
}

/// `--codes-in`: the codec decoder alone, frame by frame.
fn decode_codes(
    model: &ModelDir,
    codes_in: &Path,
    out: Option<&Path>,
    format: AudioFormat,
    tuning: &lyre_engine::EngineTuning,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(codes_in).with_context(|| format!("reading {}", codes_in.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", codes_in.display()))?;
    let rows =
        json["codes"].as_array().with_context(|| format!("{}: no \"codes\" array", codes_in.display()))?;
    let vocab = model.speech_config.decoder_config.codebook_size as u64;
    let mut codes = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let values: Vec<u64> =
            row.as_array().map(|r| r.iter().filter_map(|c| c.as_u64()).collect()).unwrap_or_default();
        if values.len() != 16 || values.iter().any(|&c| c >= vocab) {
            bail!("{}: frame {i} must be 16 codes below {vocab}", codes_in.display());
        }
        codes.push(std::array::from_fn(|k| values[k] as u16));
    }
    if codes.is_empty() {
        bail!("{}: no frames", codes_in.display());
    }
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(tuning))?);
    let mut decoder =
        StandaloneDecoder::new(gpu, &model.speech_config, &model.speech_weights, 1, codes.len(), tuning)?;
    let pcm = decoder.decode_clip(&codes)?;
    if let Some(path) = out {
        let bytes = crate::audio::encode_clip(format, &pcm, SAMPLE_RATE)?;
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!("decoded {} frames ({:.2} s of audio)", codes.len(), codes.len() as f64 * 0.08);
    Ok(())
}

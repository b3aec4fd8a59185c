//! `lyre synth`: one clip, start to end, with the same engine the server uses.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

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

use crate::config::ServerConfig;
use crate::voices::{Encoders, VoiceStore};

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Checkpoint directory in the Hugging Face layout.
    #[arg(long)]
    pub model_dir: PathBuf,
    /// The text to speak (not needed with --codes-in).
    #[arg(long, required_unless_present = "codes_in")]
    pub text: Option<String>,
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
    /// Where the server stores cloned voices, for --voice on a Base model. Default: the
    /// `voices.dir` of --config (or LYRE_CONFIG) with LYRE_* overrides, as `lyre serve` reads it.
    #[arg(long)]
    pub voices_dir: Option<PathBuf>,
    /// The server's TOML config, read only for `voices.dir` when --voices-dir is not given.
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
    /// Emit at most this many 80 ms frames (default: 5 s plus 1 s per text token).
    #[arg(long)]
    pub max_frames: Option<u32>,
    /// Never stop at the end-of-speech token (always emit --max-frames frames).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Write the codes as JSON: {"codes": [[c0, ..., c15], ...]}.
    #[arg(long)]
    pub codes_out: Option<PathBuf>,
    /// Write the audio as a 16-bit 24 kHz mono WAV file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Decode these codes ({"codes": [[16 ints], ...]}) instead of running the talker.
    #[arg(long, conflicts_with_all = ["text", "voice", "instruct", "codes_out", "ref_audio"])]
    pub codes_in: Option<PathBuf>,
}

pub fn run(args: SynthArgs) -> anyhow::Result<()> {
    if args.codes_out.is_none() && args.out.is_none() {
        bail!("nothing to write: give --out FILE.wav and/or --codes-out FILE.json");
    }
    let model = Arc::new(ModelDir::open(&args.model_dir)?);
    if let Some(codes_in) = &args.codes_in {
        return decode_codes(&model, codes_in, args.out.as_deref());
    }
    let text = args.text.clone().unwrap_or_default();
    let voice = voice(&args, &model)?;
    check_voice_and_instruct(&model.config, &voice, args.instruct.as_deref())?;
    let sampling = sampling(&args, &model);
    sampling.validate()?;
    let text_tokens = model.tokenizer.assistant_text_ids(&text)?.len().saturating_sub(8);
    let max_frames = args.max_frames.unwrap_or_else(|| default_max_frames(text_tokens, &model.generation));
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_env())?);
    eprintln!("{} on {} ({:?})", model.describe(), gpu.info.name, gpu.info.backend);
    let reference = voice.reference().map_or(0, |r| r.codes.len() + r.text.len());
    let prompt_budget = text_tokens + 64 + args.instruct.as_ref().map_or(0, |s| s.len()) + reference;
    let opts = EngineOptions {
        max_sessions: 1,
        max_positions: prompt_budget + max_frames as usize + 2,
        max_rows_per_tick: prompt_budget,
        kv_cache: lyre_engine::KvFormat::F32,
        capture_logits: false,
        profile: false,
        profile_dispatches: false,
        inject_grid_fault: false,
    };
    let mut engine = Engine::new(gpu, model, opts)?;
    let mode = if args.streaming_text { TextMode::Streaming } else { TextMode::NonStreaming };
    let req = SessionRequest {
        text: TextInput::Whole(text),
        voice,
        language: args.language.clone(),
        instruct: args.instruct.clone(),
        mode,
        sampling,
        max_frames,
    };
    let (codes, pcm, reason) = generate(&mut engine, req)?;
    if let Some(path) = &args.codes_out {
        let json = serde_json::json!({ "codes": codes });
        std::fs::write(path, serde_json::to_vec(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.out {
        write_wav(path, &pcm)?;
    }
    eprintln!("{} frames ({:.2} s of audio), finished: {reason:?}", codes.len(), codes.len() as f64 * 0.08);
    Ok(())
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
            let dir = match &args.voices_dir {
                Some(d) => d.clone(),
                None => PathBuf::from(
                    ServerConfig::load(args.config.as_deref(), std::env::vars())
                        .context("reading voices.dir from the config (or pass --voices-dir)")?
                        .voices
                        .dir,
                ),
            };
            let store = VoiceStore::open(&dir, usize::MAX)?;
            let stored = store.get(name.trim()).with_context(|| {
                format!("--voice: no stored voice `{name}` in {} (see --voices-dir)", dir.display())
            })?;
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

type Generated = (Vec<[u16; 16]>, Vec<f32>, FinishReason);

/// Steps the engine until the session ends, with a progress line on stderr.
fn generate(engine: &mut Engine, req: SessionRequest) -> anyhow::Result<Generated> {
    let id = engine.start(req)?;
    let started = Instant::now();
    let (mut codes, mut pcm) = (Vec::new(), Vec::new());
    loop {
        for out in engine.step()? {
            if out.id != id {
                continue;
            }
            if let Some(f) = out.frame {
                codes.push(f.codes);
                pcm.extend_from_slice(&f.pcm);
                if codes.len() % 25 == 0 {
                    let secs = started.elapsed().as_secs_f64();
                    eprint!(
                        "\rframe {} ({:.1} s of audio, {:.1} frames/s)",
                        codes.len(),
                        codes.len() as f64 * 0.08,
                        codes.len() as f64 / secs
                    );
                    let _ = std::io::stderr().flush();
                }
            }
            if let Some(reason) = out.finished {
                if codes.len() >= 25 {
                    eprintln!();
                }
                return Ok((codes, pcm, reason));
            }
        }
    }
}

fn write_wav(path: &Path, pcm: &[f32]) -> anyhow::Result<()> {
    let bytes = crate::audio::encode_clip(crate::audio::AudioFormat::Wav, pcm, crate::audio::SAMPLE_RATE)?;
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// `--codes-in`: the codec decoder alone, frame by frame.
fn decode_codes(model: &ModelDir, codes_in: &Path, out: Option<&Path>) -> anyhow::Result<()> {
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
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_env())?);
    let mut decoder =
        StandaloneDecoder::new(gpu, &model.speech_config, &model.speech_weights, 1, codes.len())?;
    let pcm = decoder.decode_clip(&codes)?;
    if let Some(path) = out {
        write_wav(path, &pcm)?;
    }
    eprintln!("decoded {} frames ({:.2} s of audio)", codes.len(), codes.len() as f64 * 0.08);
    Ok(())
}

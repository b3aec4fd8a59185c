//! A broken speech-tokenizer checkpoint is refused with an error naming the file and the tensor.

use std::path::{Path, PathBuf};

use lyre_engine::checkpoint::config::{read_json, SpeechTokenizerConfig};
use lyre_engine::checkpoint::weights::WeightFile;
use lyre_engine::speech_encoder::SpeechEncoder;
use lyre_engine::EngineError;
use safetensors::tensor::TensorView;
use safetensors::SafeTensors;

use crate::support::fixture;

fn speech_dir() -> PathBuf {
    fixture("tiny-base").join("speech_tokenizer")
}

/// The fixture's speech-tokenizer weights, with `edit` applied to each `(name, shape, bytes)`
/// (`None` drops the tensor), written to a temporary file.
fn edited_checkpoint(
    tag: &str,
    edit: impl Fn(&str, Vec<usize>, Vec<u8>) -> Option<(Vec<usize>, Vec<u8>)>,
) -> PathBuf {
    let bytes = std::fs::read(speech_dir().join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let kept: Vec<(String, safetensors::tensor::Dtype, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .filter_map(|(name, t)| {
            let (shape, data) = edit(&name, t.shape().to_vec(), t.data().to_vec())?;
            Some((name, t.dtype(), shape, data))
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> =
        kept.iter().map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap())).collect();
    let path = std::env::temp_dir().join(format!("lyre-mimi-{tag}-{}.safetensors", std::process::id()));
    safetensors::serialize_to_file(views, None, &path).unwrap();
    path
}

fn load(path: &Path) -> Result<SpeechEncoder, EngineError> {
    let config_path = speech_dir().join("config.json");
    let config: SpeechTokenizerConfig = read_json(&config_path).unwrap();
    let weights = WeightFile::open(path).unwrap();
    let result = SpeechEncoder::from_parts(&config, &weights, &config_path);
    let _ = std::fs::remove_file(path);
    result
}

#[test]
fn untouched_copy_loads() {
    let path = edited_checkpoint("copy", |_, s, b| Some((s, b)));
    assert!(load(&path).is_ok());
}

#[test]
fn a_missing_codebook_names_file_and_tensor() {
    let gone = "encoder.quantizer.acoustic_residual_vector_quantizer.layers.30.codebook.embed_sum";
    let path = edited_checkpoint("missing", |n, s, b| (n != gone).then_some((s, b)));
    match load(&path) {
        Err(e @ EngineError::MissingTensor { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(gone) && msg.contains(&*path.to_string_lossy()), "{msg}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded without {gone}"),
    }
}

#[test]
fn a_misshapen_conv_names_file_and_tensor() {
    let bad = "encoder.encoder.layers.0.conv.weight";
    let path = edited_checkpoint("shape", |n, s, b| {
        if n == bad {
            // [4, 1, 7] → [4, 1, 6]: drop the last tap of every filter.
            let keep: Vec<u8> = b.chunks_exact(7 * 4).flat_map(|f| f[..6 * 4].to_vec()).collect();
            Some((vec![s[0], s[1], 6], keep))
        } else {
            Some((s, b))
        }
    });
    match load(&path) {
        Err(e @ EngineError::TensorShape { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(bad) && msg.contains(&*path.to_string_lossy()), "{msg}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("loaded a misshapen {bad}"),
    }
}

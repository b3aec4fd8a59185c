//! Seeded random tensors for every name and shape the config implies.

use std::path::Path;

use half::bf16;
use lyre_engine::checkpoint::weights::{ExpectedTensor, TensorDtype};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::tensor::{Dtype, TensorView};

/// The initial value pattern of a tensor, from its name (like the official initialisers).
fn fill(name: &str, shape: &[usize], rng: &mut StdRng) -> Vec<f32> {
    let n: usize = shape.iter().product();
    let constant = |v: f32| vec![v; n];
    let leaf = name.rsplit('.').next().unwrap_or(name);
    if name.ends_with("norm.weight") || leaf == "cluster_usage" || leaf == "initialized" {
        return constant(1.0);
    }
    if leaf == "bias" || leaf == "alpha" || leaf == "beta" {
        return constant(0.0);
    }
    if leaf == "scale" || leaf == "gamma" {
        return constant(0.01);
    }
    let fan_in: usize = shape.iter().skip(1).product::<usize>().max(1);
    let std = if name.contains("embedding") || name.contains("embed_sum") {
        1.0
    } else {
        (fan_in as f32).powf(-0.5)
    };
    (0..n).map(|_| (rng.random::<f32>() * 2.0 - 1.0) * std * 1.732).collect()
}

pub fn write_safetensors(path: &Path, tensors: &[ExpectedTensor], seed: u64) -> anyhow::Result<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut data: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::with_capacity(tensors.len());
    for t in tensors {
        let values = fill(&t.name, &t.shape, &mut rng);
        let (dtype, bytes) = match t.dtype {
            TensorDtype::Bf16 => (
                Dtype::BF16,
                values.iter().flat_map(|&v| bf16::from_f32(v).to_bits().to_le_bytes()).collect(),
            ),
            TensorDtype::F32 => (Dtype::F32, values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        };
        data.push((t.name.clone(), dtype, t.shape.clone(), bytes));
    }
    let views = data
        .iter()
        .map(|(name, dtype, shape, bytes)| Ok((name.clone(), TensorView::new(*dtype, shape.clone(), bytes)?)))
        .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()?;
    safetensors::serialize_to_file(views, None, path)?;
    Ok(())
}

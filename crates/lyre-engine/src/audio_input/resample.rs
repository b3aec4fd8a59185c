//! Resampling a clip to the encoders' 24 kHz as the official loader does:
//! `librosa.resample(y, orig_sr=rate, target_sr=24000)`, whose default `res_type` is `soxr_hq`.
//!
//! With the `soxr` feature (on by default) this is libsoxr itself, linked dynamically from the
//! system (Debian: `libsoxr0` to run, `libsoxr-dev` to build; LGPL-2.1), driven the way
//! python-soxr drives it: the HQ recipe (20-bit precision, linear phase), one thread, input fed in
//! blocks of `max(1000, 48000 · in / out)` samples into an output buffer of
//! `len · out / in + 1`, then one flush. librosa then fixes the length to
//! `ceil(len · out / in)` (zero padding or cutting). The samples equal the official ones bit for
//! bit where both use the same libsoxr engine (`cr32s`, SSE, on x86-64).
//!
//! Without the feature a band-limited sinc resampler (`rubato`, 256 taps, Blackman-Harris,
//! cut-off at 95 % of the lower Nyquist frequency) gives the same length and a close signal but
//! not the official samples. The residual quantiser amplifies the difference: on the tiny
//! reference checkpoint most reference codes then differ from the official ones, and the x-vector
//! by about 1e-3 of its scale.

use super::{reference, DecodedAudio};
use crate::error::Result;

/// Resamples mono audio to `rate`; audio already at `rate` is returned unchanged. The output has
/// `ceil(len · rate / input_rate)` samples.
pub fn resample(audio: &DecodedAudio, rate: u32) -> Result<Vec<f32>> {
    if audio.sample_rate == 0 || rate == 0 {
        return Err(reference(format!("cannot resample from {} Hz to {rate} Hz", audio.sample_rate)));
    }
    if audio.sample_rate == rate {
        return Ok(audio.samples.clone());
    }
    let (from, to) = (f64::from(audio.sample_rate), f64::from(rate));
    let mut out =
        if audio.samples.is_empty() { Vec::new() } else { engine::resample(&audio.samples, from, to)? };
    // librosa: n = ceil(len * (target / orig)), then `fix_length` pads with zeros or cuts.
    let len = (audio.samples.len() as f64 * (to / from)).ceil() as usize;
    out.resize(len, 0.0);
    Ok(out)
}

#[cfg(feature = "soxr")]
mod engine {
    use soxr::format::Mono;
    use soxr::params::{QualityRecipe, QualitySpec, RuntimeSpec};
    use soxr::Soxr;

    use super::reference;
    use crate::error::Result;

    pub(super) fn resample(input: &[f32], from: f64, to: f64) -> Result<Vec<f32>> {
        let failed = |e: soxr::Error| reference(format!("resampling failed: {}", e.as_str()));
        let quality = QualitySpec::new(QualityRecipe::high());
        let mut soxr =
            Soxr::<Mono<f32>>::new_with_params(from, to, quality, RuntimeSpec::new(1)).map_err(failed)?;
        // python-soxr's `csoxr_split_ch`: the output buffer and input block sizes.
        let capacity = (input.len() as f64 * to / from + 1.0) as usize;
        let block = (48_000.0 * from / to).max(1000.0) as usize;
        let mut out = vec![0.0f32; capacity];
        let mut done = 0;
        for mut rest in input.chunks(block) {
            // libsoxr takes all of a block when the output buffer has room for what it yields.
            while !rest.is_empty() {
                let step = soxr.process(rest, &mut out[done..]).map_err(failed)?;
                done += step.output_frames;
                rest = &rest[step.input_frames..];
                if step.input_frames == 0 && step.output_frames == 0 {
                    return Err(reference("resampling stalled: the output buffer is full"));
                }
            }
        }
        done += soxr.drain(&mut out[done..]).map_err(failed)?;
        out.truncate(done);
        Ok(out)
    }
}

#[cfg(not(feature = "soxr"))]
mod engine {
    use rubato::{
        Resampler, SincFixedIn, SincInterpolationParameters, SincInterpolationType, WindowFunction,
    };

    use super::reference;
    use crate::error::Result;

    /// Input frames per resampler call.
    const CHUNK: usize = 4096;

    /// The filter delay is removed, so the output is aligned with the input.
    pub(super) fn resample(input: &[f32], from: f64, to: f64) -> Result<Vec<f32>> {
        let ratio = to / from;
        let expected = (input.len() as f64 * ratio).ceil() as usize;
        let params = SincInterpolationParameters {
            sinc_len: 256,
            f_cutoff: 0.95,
            interpolation: SincInterpolationType::Cubic,
            oversampling_factor: 256,
            window: WindowFunction::BlackmanHarris2,
        };
        let failed = |e: &dyn std::fmt::Display| reference(format!("resampling failed: {e}"));
        let mut resampler = SincFixedIn::<f32>::new(ratio, 1.0, params, CHUNK, 1).map_err(|e| failed(&e))?;
        let delay = resampler.output_delay();
        let mut out = Vec::with_capacity(expected + delay + 2 * CHUNK);
        let mut chunks = input.chunks_exact(CHUNK);
        for chunk in chunks.by_ref() {
            out.extend_from_slice(&resampler.process(&[chunk], None).map_err(|e| failed(&e))?[0]);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            out.extend_from_slice(
                &resampler.process_partial(Some(&[rest]), None).map_err(|e| failed(&e))?[0],
            );
        }
        // Flush the filter's tail until the delayed output covers the whole input.
        while out.len() < delay + expected {
            let tail = resampler.process_partial::<&[f32]>(None, None).map_err(|e| failed(&e))?;
            if tail[0].is_empty() {
                break;
            }
            out.extend_from_slice(&tail[0]);
        }
        out.drain(..delay.min(out.len()));
        out.truncate(expected);
        Ok(out)
    }
}

//! The output fields every endpoint accepts beside its format — `sample_rate`, `speed`,
//! `encoding` — checked into an [`OutputSpec`]; errors name the field.

use serde_json::Value;

use super::error::{ApiError, JsonObject};
use crate::audio::{AudioError, AudioFormat, OutputSpec};
use crate::errors::{ErrorCode, Failure};

/// The output fields as a request gives them (before validation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputFields {
    pub sample_rate: Option<u32>,
    pub speed: Option<f64>,
    pub encoding: Option<String>,
}

impl OutputFields {
    /// Takes `sample_rate`, `speed` and `encoding` out of an HTTP body.
    pub fn take(body: &mut JsonObject) -> Result<Self, ApiError> {
        let sample_rate = match body.0.remove("sample_rate") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                Failure::invalid("sample_rate", format!("must be an integer in Hz, got {v}"))
            })?),
        };
        let speed = match body.0.remove("speed") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64().ok_or_else(|| Failure::invalid("speed", format!("must be a number, got {v}")))?,
            ),
        };
        let encoding = body.take_string("encoding")?;
        Ok(OutputFields { sample_rate, speed, encoding })
    }

    /// The validated output for `format`.
    pub fn spec(&self, format: AudioFormat) -> Result<OutputSpec, Failure> {
        OutputSpec::new(format, self.encoding.as_deref(), self.sample_rate, self.speed).map_err(audio_failure)
    }
}

/// An [`AudioError`] from validation as a 400 naming its field.
pub fn audio_failure(e: AudioError) -> Failure {
    match e.field() {
        Some(field) => Failure::invalid(field, e.to_string()),
        None => Failure::new(ErrorCode::EncoderError, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(json: &str) -> Result<OutputFields, ApiError> {
        OutputFields::take(&mut JsonObject::parse(json.as_bytes())?)
    }

    #[test]
    fn fields_are_taken_and_checked_by_name() {
        let f = take(r#"{"sample_rate":16000,"speed":1.5,"encoding":null}"#).unwrap();
        assert_eq!(f, OutputFields { sample_rate: Some(16_000), speed: Some(1.5), encoding: None });
        let spec = f.spec(AudioFormat::Pcm).unwrap();
        assert_eq!((spec.sample_rate, spec.speed), (16_000, Some(1.5)));
        for (body, field) in [
            (r#"{"sample_rate":"16000"}"#, "sample_rate"),
            (r#"{"sample_rate":-8000}"#, "sample_rate"),
            (r#"{"sample_rate":1e12}"#, "sample_rate"),
            (r#"{"speed":"fast"}"#, "speed"),
            (r#"{"encoding":7}"#, "encoding"),
        ] {
            let err = take(body).unwrap_err().0;
            assert_eq!((err.status(), err.field.as_deref()), (400, Some(field)), "{body}");
        }
        let err = take(r#"{"speed":9}"#).unwrap().spec(AudioFormat::Mp3).unwrap_err();
        assert_eq!(
            (err.status(), err.code, err.field.as_deref()),
            (400, ErrorCode::InvalidRequest, Some("speed"))
        );
    }
}

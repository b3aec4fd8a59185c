//! [`EngineTuning`]: every switch that changes which kernels run or how the GPU is driven, with
//! the defaults measured best. The server fills it from the `[engine.tuning]` section of its
//! configuration (and `LYRE_ENGINE_TUNING_*` variables); `lyre bench` from `--tune KEY=VALUE`.
//! Which kernel each key selects is decided in one place, [`crate::kernels::select`], and listed
//! in `docs/kernels.md`.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// Automatic (the adapter decides), or forced on or off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch {
    /// On for GPUs, off for CPU adapters (lavapipe), where the simpler kernels are faster.
    #[default]
    Auto,
    /// On wherever the adapter can run it (tests force the GPU kernels on lavapipe this way).
    On,
    Off,
}

impl Switch {
    /// Whether the switch is on for an adapter that is (`cpu`) or is not a CPU adapter.
    pub fn enabled(self, cpu: bool) -> bool {
        match self {
            Switch::Auto => !cpu,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

/// The mat-vec kernel family of matmuls over few rows (and of attention and RoPE).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatmulChoice {
    /// Subgroup kernels on GPUs with subgroups of one size, per-thread kernels elsewhere.
    #[default]
    Auto,
    PerThread,
    /// The subgroup kernels wherever the adapter has subgroups of one size.
    Subgroup,
}

/// The sampler kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplerChoice {
    /// The subgroup sampler where the adapter has subgroups of one power-of-two size.
    #[default]
    Auto,
    /// Shared-memory reductions on every adapter.
    Portable,
}

/// A register tile of the GEMM kernels by its size, rows × columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TileName {
    #[serde(rename = "16x64")]
    Rows16,
    #[serde(rename = "32x64")]
    Rows32,
    #[serde(rename = "64x64")]
    Rows64,
    #[serde(rename = "128x64")]
    Rows128,
    #[serde(rename = "128x128")]
    Rows128Wide,
}

/// Every tuning switch of the engine. The defaults are what runs unless a key says otherwise;
/// `docs/kernels.md` says what each key changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineTuning {
    /// Use the first adapter whose name contains this (case-insensitive); empty: the best one.
    pub adapter: String,
    /// Keep wgpu's runtime checks in the kernels (bounds clamps, loop guards): slower.
    pub shader_checks: bool,
    /// Run the GEMM tiles on cooperative matrices where the adapter has them (f16 operands).
    pub coop: bool,
    /// Submit the next tick before reading the current one.
    pub pipeline: bool,
    /// A tick launched onto an idle GPU is submitted in parts, the first once this many
    /// dispatches are recorded, each next four times as long, so the GPU starts while the CPU
    /// records the rest; 0: in one submission.
    pub first_submit_dispatches: u32,
    /// The kernels of matmuls over few rows, attention and q/k-norm + RoPE.
    pub matmul: MatmulChoice,
    /// The 16-byte-load mat-vec for few rows where the subgroup kernels run.
    pub matvec: bool,
    /// Subgroups per output column of the mat-vec, 1 to 8; 0: by shape.
    pub matvec_split: u32,
    /// The few-rows matmul for ticks of `few_rows_min_rows..=few_rows_max_rows` rows.
    pub few_rows: Switch,
    pub few_rows_min_rows: u32,
    pub few_rows_max_rows: u32,
    /// Matmuls narrower than this keep the mat-vec instead of the few-rows kernel.
    pub few_rows_min_cols: u32,
    /// The register-tiled GEMM for matmuls from `gemm_min_rows` rows.
    pub gemm: Switch,
    pub gemm_min_rows: u32,
    /// The most ways a GEMM splits K, 1 (never) to 32.
    pub gemm_max_split: u32,
    /// The GEMM tile from 256 rows.
    pub gemm_large_tile: TileName,
    /// Rows from which GEMM tiles run on cooperative matrices (where `coop` leaves them on).
    pub coop_min_rows: u32,
    /// Cooperative tiles of 64 × 128 for 64 rows and more (else 64 × 64).
    pub coop_wide: bool,
    /// Cooperative GEMM levels starting at this many rows take the 64 × 128 tile where
    /// `coop_wide` is on, even where their register tile has 16 or 32 rows.
    pub coop_wide_min_rows: u32,
    /// K per staged chunk of the matmuls' 64 × 128 cooperative tile: 32 (two staging buffers)
    /// or 64 (one buffer, half as many round trips to memory).
    pub coop_wide_chunk: u32,
    /// Cooperative levels of at most this many rows (16 or 32; 0: none) take the 32 × 128
    /// tile with K in chunks of 64 where they would take the 64 × 128 one.
    pub coop_short_max_rows: u32,
    /// Most rows for which `down` reads SwiGLU(gate_up) in its input load.
    pub fused_swiglu_max_rows: u32,
    /// q/k-norm + RoPE and attention in one dispatch on decode steps (subgroup kernels).
    pub fused_attention: bool,
    /// Each decoder layer of a one-row tick as one persistent dispatch.
    pub persistent: Switch,
    /// Workgroups of a persistent layer (rounded down to a power of two; one on CPU adapters).
    pub persistent_groups: u32,
    /// Most parts a persistent layer splits one head's keys into; 0: the grid's workgroups
    /// per head, 1: never split.
    pub attention_chunks: u32,
    /// Keys per part at least.
    pub attention_chunk_keys: u32,
    pub sampler: SamplerChoice,
    /// A codec conv layer runs as a GEMM from this many live rows (sessions × rows each)...
    pub conv_gemm_min_rows: u32,
    /// ...when it has at least this many output columns...
    pub conv_gemm_min_cols: u32,
    /// ...and its GEMM grid at least this many tiles (workgroups where K is split).
    pub conv_gemm_min_tiles: u32,
    /// Conv layers whose K is fewer chunks than this keep the direct kernel at every tick size.
    pub conv_gemm_min_chunks: u32,
    /// The most ways a conv GEMM whose grid is short of the GPU splits K, 1 (never) to 16.
    pub conv_gemm_max_split: u32,
    /// The codec conv GEMM's tile.
    pub conv_tile: TileName,
    /// Codec conv GEMMs on cooperative matrices where the adapter has them.
    pub conv_coop: bool,
    /// Ticks of this many sessions and more run the conv GEMMs on the 128 × 128 cooperative tile
    /// where the conv tile is the 64 × 128 cooperative one.
    pub conv_tall_min_sessions: u32,
    /// Most K slices of the codec's conv kernel in a tick of one session.
    pub conv_max_split: u32,
    /// Conv layers of a few output columns (the codec's last) on the narrow kernel.
    pub conv_narrow: Switch,
    /// A codec residual unit's dilated conv and 1 × 1 conv as one GEMM dispatch where the tile
    /// holds all its channels and the dilated conv's K is not split.
    pub conv_fuse_units: bool,
}

impl Default for EngineTuning {
    fn default() -> Self {
        EngineTuning {
            adapter: String::new(),
            shader_checks: false,
            coop: true,
            pipeline: true,
            first_submit_dispatches: 32,
            matmul: MatmulChoice::Auto,
            matvec: true,
            matvec_split: 0,
            few_rows: Switch::Auto,
            few_rows_min_rows: 5,
            few_rows_max_rows: 8,
            few_rows_min_cols: 4096,
            gemm: Switch::Auto,
            gemm_min_rows: 6,
            gemm_max_split: 16,
            gemm_large_tile: TileName::Rows64,
            coop_min_rows: 6,
            coop_wide: true,
            coop_wide_min_rows: 6,
            coop_wide_chunk: 64,
            coop_short_max_rows: 16,
            fused_swiglu_max_rows: 1,
            fused_attention: true,
            persistent: Switch::Auto,
            persistent_groups: 128,
            attention_chunks: 0,
            attention_chunk_keys: 64,
            sampler: SamplerChoice::Auto,
            conv_gemm_min_rows: 32,
            conv_gemm_min_cols: 32,
            conv_gemm_min_tiles: 60,
            conv_gemm_min_chunks: 1,
            conv_gemm_max_split: 8,
            conv_tile: TileName::Rows128,
            conv_coop: true,
            conv_tall_min_sessions: 8,
            conv_max_split: 16,
            conv_narrow: Switch::Auto,
            conv_fuse_units: true,
        }
    }
}

/// The prefix of the environment variables that [`EngineTuning::with_env`] reads.
pub const ENV_PREFIX: &str = "LYRE_ENGINE_TUNING_";

fn invalid(key: &str, message: impl Into<String>) -> EngineError {
    EngineError::Tuning { key: key.to_string(), message: message.into() }
}

impl EngineTuning {
    /// Checks the values that have a range; the error names the key.
    pub fn validate(&self) -> Result<()> {
        let ranges = [
            ("matvec_split", self.matvec_split, 0, 8),
            ("few_rows_min_rows", self.few_rows_min_rows, 1, 32),
            ("few_rows_max_rows", self.few_rows_max_rows, 1, 32),
            ("gemm_min_rows", self.gemm_min_rows, 1, u32::MAX),
            ("gemm_max_split", self.gemm_max_split, 1, 32),
            ("first_submit_dispatches", self.first_submit_dispatches, 0, 65_536),
            ("coop_min_rows", self.coop_min_rows, 1, u32::MAX),
            ("coop_wide_min_rows", self.coop_wide_min_rows, 1, u32::MAX),
            ("coop_short_max_rows", self.coop_short_max_rows, 0, 32),
            ("persistent_groups", self.persistent_groups, 1, 1024),
            ("attention_chunks", self.attention_chunks, 0, 16),
            ("attention_chunk_keys", self.attention_chunk_keys, 1, u32::MAX),
            ("conv_gemm_min_rows", self.conv_gemm_min_rows, 1, u32::MAX),
            ("conv_gemm_min_cols", self.conv_gemm_min_cols, 1, u32::MAX),
            ("conv_gemm_min_chunks", self.conv_gemm_min_chunks, 1, u32::MAX),
            ("conv_max_split", self.conv_max_split, 1, 16),
            ("conv_gemm_max_split", self.conv_gemm_max_split, 1, 16),
            ("conv_tall_min_sessions", self.conv_tall_min_sessions, 1, u32::MAX),
        ];
        for (key, value, lo, hi) in ranges {
            if !(lo..=hi).contains(&value) {
                let range = if hi == u32::MAX { format!("at least {lo}") } else { format!("in {lo}..={hi}") };
                return Err(invalid(key, format!("must be {range}, got {value}")));
            }
        }
        if ![32, 64].contains(&self.coop_wide_chunk) {
            return Err(invalid(
                "coop_wide_chunk",
                format!("must be 32 or 64, got {}", self.coop_wide_chunk),
            ));
        }
        if self.few_rows_min_rows > self.few_rows_max_rows {
            return Err(invalid(
                "few_rows_min_rows",
                format!("is above few_rows_max_rows ({})", self.few_rows_max_rows),
            ));
        }
        Ok(())
    }

    /// Sets one key from its text form, as in TOML without quotes: `true`/`false` (also
    /// `1`/`0`, `on`/`off`) for switches that are on or off, a number, or a name. An unknown
    /// key or a value of the wrong kind is an error naming the key; ranges are checked by
    /// [`EngineTuning::validate`] once every key is set.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let mut json = serde_json::to_value(&*self).expect("the tuning serialises");
        let fields = json.as_object_mut().expect("the tuning is a struct");
        let Some(old) = fields.get(key) else {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            return Err(invalid(key, format!("no such key; the keys are {}", known.join(", "))));
        };
        let new = match old {
            serde_json::Value::Bool(_) => serde_json::Value::Bool(
                parse_bool(value).ok_or_else(|| invalid(key, format!("`{value}` is not true or false")))?,
            ),
            serde_json::Value::Number(_) => {
                let n: u32 =
                    value.trim().parse().map_err(|_| invalid(key, format!("`{value}` is not a count")))?;
                n.into()
            }
            _ => serde_json::Value::String(value.trim().to_string()),
        };
        fields.insert(key.to_string(), new);
        *self = serde_json::from_value(json).map_err(|e| invalid(key, e.to_string()))?;
        Ok(())
    }

    /// This tuning with every `LYRE_ENGINE_TUNING_<KEY>` variable of `vars` applied (the names of
    /// the server's configuration overrides), validated; tests and tools pass the process's
    /// environment.
    pub fn with_env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Result<Self> {
        for (name, value) in vars {
            if let Some(key) = name.strip_prefix(ENV_PREFIX) {
                self.set(&key.to_lowercase(), &value)?;
            }
        }
        self.validate()?;
        Ok(self)
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_set_from_text_and_mistakes_name_the_key() {
        let mut t = EngineTuning::default();
        t.set("gemm", "on").unwrap();
        t.set("gemm_min_rows", "1").unwrap();
        t.set("coop", "0").unwrap();
        t.set("conv_tile", "128x128").unwrap();
        assert_eq!(
            (t.gemm, t.gemm_min_rows, t.coop, t.conv_tile),
            (Switch::On, 1, false, TileName::Rows128Wide)
        );
        let err = |key: &str, value: &str| EngineTuning::default().set(key, value).unwrap_err().to_string();
        assert!(
            err("gem_min_rows", "1").contains("engine.tuning.gem_min_rows"),
            "{}",
            err("gem_min_rows", "1")
        );
        assert!(err("gemm_min_rows", "many").contains("engine.tuning.gemm_min_rows"));
        let zero = EngineTuning { gemm_min_rows: 0, ..EngineTuning::default() };
        assert!(zero.validate().unwrap_err().to_string().contains("gemm_min_rows: must be at least 1"));
        assert!(err("matmul", "fast").contains("engine.tuning.matmul"));
        assert!(err("conv_tile", "64").contains("128x64"), "{}", err("conv_tile", "64"));
        assert!(err("coop", "maybe").contains("engine.tuning.coop"));
        let odd_chunk = EngineTuning { coop_wide_chunk: 48, ..EngineTuning::default() };
        assert!(odd_chunk.validate().unwrap_err().to_string().contains("coop_wide_chunk: must be 32 or 64"));
    }

    #[test]
    fn environment_variables_name_keys() {
        let vars =
            [("LYRE_ENGINE_TUNING_PERSISTENT", "off"), ("LYRE_ENGINE_MAX_SESSIONS", "3"), ("PATH", "/bin")];
        let t = EngineTuning::default().with_env(vars.map(|(a, b)| (a.to_string(), b.to_string()))).unwrap();
        assert_eq!(t, EngineTuning { persistent: Switch::Off, ..EngineTuning::default() });
        let bad = [("LYRE_ENGINE_TUNING_PERSISTANT".to_string(), "off".to_string())];
        assert!(EngineTuning::default().with_env(bad).is_err());
    }

    #[test]
    fn the_defaults_are_valid_and_switches_follow_the_adapter() {
        EngineTuning::default().validate().unwrap();
        assert!(Switch::Auto.enabled(false) && !Switch::Auto.enabled(true));
        assert!(Switch::On.enabled(true) && !Switch::Off.enabled(false));
    }
}

//! `lyre check-config`: the binary accepts the shipped configuration (printing the effective
//! `[engine.tuning]`) and rejects an unknown or malformed tuning key by its name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check(file: &Path, vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lyre"));
    cmd.arg("check-config").arg(file);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("lyre runs")
}

fn write(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("lyre-check-config-{}-{name}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_shipped_config_passes_and_shows_the_tuning() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
    let out = check(&shipped, &[("LYRE_ENGINE_TUNING_PERSISTENT", "off")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("[engine.tuning]") && stdout.contains("persistent = \"off\""), "{stdout}");
}

#[test]
fn unknown_and_malformed_tuning_keys_fail_by_name() {
    for (name, text, vars, wanted) in [
        ("unknown", "[engine.tuning]\nfused_atention = false\n", &[][..], "fused_atention"),
        ("malformed", "[engine.tuning]\ngemm_min_rows = \"eight\"\n", &[], "engine.tuning.gemm_min_rows"),
        ("range", "[engine.tuning]\nmatvec_split = 9\n", &[], "engine.tuning.matvec_split"),
        ("env", "", &[("LYRE_ENGINE_TUNING_SAMPLER", "fastest")], "engine.tuning.sampler"),
    ] {
        let path = write(name, text);
        let out = check(&path, vars);
        std::fs::remove_file(&path).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: accepted");
        assert!(stderr.contains(wanted), "{name}: {stderr}");
    }
}

//! The configuration file, its environment overrides and the engine's tuning keys.

mod file {
    use super::super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn the_shipped_default_file_equals_the_built_in_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
        assert_eq!(ServerConfig::load(Some(&path), vec![]).unwrap(), ServerConfig::default());
        let dev = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/dev.toml");
        ServerConfig::load(Some(&dev), vec![]).unwrap();
    }

    #[test]
    fn environment_overrides_the_file_with_typed_values() {
        let cfg = ServerConfig::load(
            None,
            env(&[
                ("LYRE_ENGINE_MAX_SESSIONS", "7"),
                ("LYRE_MODEL_ALLOW_CPU_ADAPTER", "true"),
                ("LYRE_SERVER_CORS_ORIGINS", "http://a, http://b"),
                ("LYRE_LOG", "debug"),
                ("LYRE_VOICES_DIR", "/var/lib/lyre/voices"),
                ("PATH", "/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(cfg.engine.max_sessions, 7);
        assert!(cfg.model.allow_cpu_adapter);
        assert_eq!(cfg.server.cors_origins, vec!["http://a", "http://b"]);
        assert_eq!(cfg.voices.dir, "/var/lib/lyre/voices");
    }

    /// The image's file names a directory; `-e LYRE_MODEL_REPO` must still serve the repo.
    #[test]
    fn a_model_variable_replaces_the_files_other_model_key() {
        let path = std::env::temp_dir().join(format!("lyre-cfg-model-{}.toml", std::process::id()));
        std::fs::write(&path, "[model]\ndir = \"/models\"\n").unwrap();
        let cfg = ServerConfig::load(
            Some(&path),
            env(&[("LYRE_MODEL_REPO", "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice")]),
        )
        .unwrap();
        assert_eq!(
            (cfg.model.dir.as_str(), cfg.model.repo.as_str()),
            ("", "Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice")
        );
        let cfg = ServerConfig::load(Some(&path), env(&[("LYRE_MODEL_DIR", "/elsewhere")])).unwrap();
        assert_eq!(cfg.model.dir, "/elsewhere");
        let cfg = ServerConfig::load(Some(&path), env(&[("LYRE_MODEL_REPO", "")])).unwrap();
        assert_eq!(cfg.model.dir, "/models");
        let e = ServerConfig::load(None, env(&[("LYRE_MODEL_DIR", "/a"), ("LYRE_MODEL_REPO", "b/c")]))
            .unwrap_err();
        assert!(format!("{e:#}").contains("both set"), "{e:#}");
        std::fs::write(&path, "[model]\ndir = \"/a\"\nrepo = \"b/c\"\n").unwrap();
        let e = ServerConfig::load(Some(&path), vec![]).unwrap_err();
        assert!(format!("{e:#}").contains("both set"), "{e:#}");
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn tenants_aliases_and_the_database_come_from_the_environment() {
        let cfg = ServerConfig::load(
            None,
            env(&[
                ("LYRE_AUTH_TENANTS", "acme: acme-key-0001 acme-key-0002; beta: beta-key-0001"),
                ("LYRE_VOICES_ALIASES", "alloy=ryan, echo = aiden"),
                ("LYRE_VOICES_DATABASE", "postgres://lyre:pw@db:5432/lyre"),
            ]),
        )
        .unwrap();
        let t = &cfg.auth.tenants;
        assert_eq!((t[0].name.as_str(), t[0].keys.len(), t[1].name.as_str()), ("acme", 2, "beta"));
        assert_eq!(cfg.voices.aliases.len(), 2);
        assert_eq!(cfg.voices.aliases["echo"], "aiden");
        assert_eq!(cfg.voices.database_url(), "postgres://lyre:pw@db:5432/lyre");
        assert_eq!(ServerConfig::default().voices.database_url(), "sqlite://voices/voices.db");
        for (var, value, want) in [
            ("LYRE_VOICES_DATABASE", "mysql://x@y/z", "voices.database"),
            ("LYRE_VOICES_ALIASES", "alloy", "LYRE_VOICES_ALIASES"),
            ("LYRE_VOICES_ALIASES", "alloy=../x", "voices.aliases"),
            ("LYRE_AUTH_TENANTS", "acme", "LYRE_AUTH_TENANTS"),
            ("LYRE_AUTH_TENANTS", "acme: dup-key-0001; beta: dup-key-0001", "configured twice"),
            ("LYRE_VOICES_DATABASE_MAX_CONNECTIONS", "0", "database_max_connections"),
        ] {
            let e = ServerConfig::load(None, env(&[(var, value)])).unwrap_err();
            assert!(format!("{e:#}").contains(want), "{var}={value}: {e:#}");
        }
    }

    #[test]
    fn mistakes_are_named() {
        let e = ServerConfig::load(None, env(&[("LYRE_ENGINE_MAX_SESION", "7")])).unwrap_err();
        assert!(format!("{e:#}").contains("max_sesion"), "{e:#}");
        let e = ServerConfig::load(None, env(&[("LYRE_ENGINE_MAX_SESSIONS", "lots")])).unwrap_err();
        assert!(format!("{e:#}").contains("LYRE_ENGINE_MAX_SESSIONS"), "{e:#}");
        let e = ServerConfig::load(None, env(&[("LYRE_SERVER_LISTEN", "nowhere")])).unwrap_err();
        assert!(format!("{e:#}").contains("server.listen"), "{e:#}");
        let e = ServerConfig::load(None, env(&[("LYRE_ENGINE_KV_CACHE", "bf16")])).unwrap_err();
        assert!(format!("{e:#}").contains("engine.kv_cache") && format!("{e:#}").contains("f16"), "{e:#}");
        let cfg = ServerConfig::load(None, env(&[("LYRE_ENGINE_KV_CACHE", "f16")])).unwrap();
        assert_eq!(cfg.engine.kv_format().unwrap(), lyre_engine::KvFormat::F16);
        let e = ServerConfig::load(None, env(&[("LYRE_ENGINE_FIRST_AUDIO_MARGIN_MS", "81")])).unwrap_err();
        assert!(format!("{e:#}").contains("engine.first_audio_margin_ms"), "{e:#}");
        let cfg = ServerConfig::load(None, env(&[("LYRE_ENGINE_FIRST_AUDIO_MARGIN_MS", "40")])).unwrap();
        assert_eq!(cfg.engine.first_audio_margin_ms, 40);
        let dir = std::env::temp_dir().join(format!("lyre-cfg-{}.toml", std::process::id()));
        std::fs::write(&dir, "[engine]\nmax_sesions = 3\n").unwrap();
        let e = ServerConfig::load(Some(&dir), vec![]).unwrap_err();
        assert!(format!("{e:#}").contains("max_sesions"), "{e:#}");
        std::fs::remove_file(dir).unwrap();
    }
}

mod tuning {
    use lyre_engine::tuning::{Switch, TileName};

    use super::super::*;

    fn load(file: &str, vars: &[(&str, &str)]) -> anyhow::Result<ServerConfig> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("lyre-tuning-{}-{n}.toml", std::process::id()));
        std::fs::write(&path, file).unwrap();
        let vars: Vec<(String, String)> = vars.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let cfg = ServerConfig::load(Some(&path), vars);
        std::fs::remove_file(path).unwrap();
        cfg
    }

    #[test]
    fn tuning_keys_come_from_the_file_then_the_environment() {
        let cfg = load(
            "[engine.tuning]\ngemm = \"off\"\nconv_tile = \"128x128\"\npersistent_groups = 64\n",
            &[
                ("LYRE_ENGINE_TUNING_GEMM", "on"),
                ("LYRE_ENGINE_TUNING_COOP", "0"),
                ("LYRE_ENGINE_TUNING_GEMM_MIN_ROWS", "16"),
            ],
        )
        .unwrap();
        let t = &cfg.engine.tuning;
        assert_eq!((t.gemm, t.gemm_min_rows, t.coop), (Switch::On, 16, false));
        assert_eq!((t.conv_tile, t.persistent_groups), (TileName::Rows128Wide, 64));
        assert_eq!(t.matmul, lyre_engine::tuning::MatmulChoice::Auto, "keys not given keep their defaults");
    }

    #[test]
    fn unknown_and_malformed_tuning_keys_are_named() {
        let err = |file: &str, vars: &[(&str, &str)]| format!("{:#}", load(file, vars).unwrap_err());
        for (file, vars, names) in [
            ("[engine.tuning]\ngemm_min_row = 3\n", &[][..], "gemm_min_row"),
            ("[engine.tuning]\nconv_tile = \"64\"\n", &[], "engine.tuning.conv_tile"),
            ("[engine.tuning]\ncoop = 0\n", &[], "engine.tuning.coop"),
            ("[engine.tuning]\npersistent = \"maybe\"\n", &[], "engine.tuning.persistent"),
            ("[engine.tuning]\ngemm_max_split = 64\n", &[], "engine.tuning.gemm_max_split"),
            ("", &[("LYRE_ENGINE_TUNING_GEM", "on")], "no key `gem` in section [engine.tuning]"),
            ("", &[("LYRE_ENGINE_TUNING_GEMM_MIN_ROWS", "many")], "LYRE_ENGINE_TUNING_GEMM_MIN_ROWS"),
            ("", &[("LYRE_ENGINE_TUNING_MATMUL", "fast")], "engine.tuning.matmul"),
            ("", &[("LYRE_ENGINE_TUNING_PIPELINE", "maybe")], "LYRE_ENGINE_TUNING_PIPELINE"),
        ] {
            let e = err(file, vars);
            assert!(e.contains(names), "{file:?} {vars:?}: {e}");
        }
    }
}

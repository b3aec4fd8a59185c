//! A runtime directory for the GPU drivers. Mesa's Vulkan drivers (lavapipe, and the Wayland
//! support they load) print `error: XDG_RUNTIME_DIR is invalid or not set in the environment.`
//! to stderr when the variable is missing, as it is in containers and fresh root shells: a line
//! that is not JSON in a JSON log, and a false alarm in a plain one.

/// Points `XDG_RUNTIME_DIR` at a private directory of this user's when it is unset or names no
/// directory. Called first thing in `main`, before any thread exists to read the environment.
pub fn ensure() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir()) {
            return;
        }
        // The process's own user, read from its /proc entry (no libc call needed).
        let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("lyre-runtime-{uid}"));
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        // Only a real directory of this user's that nobody else may enter: in a shared /tmp
        // another user could have made the name first (a driver may open sockets in it).
        let private = std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0);
        if private {
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
        }
    }
}

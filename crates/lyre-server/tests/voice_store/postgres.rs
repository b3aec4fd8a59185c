//! A throw-away PostgreSQL server for the store suite: Debian's `postgresql` package, a cluster
//! initialised in a temporary directory and started on loopback, stopped when dropped. With
//! `LYRE_TEST_POSTGRES_URL` set, that server is used instead. Without either the suite fails:
//! PostgreSQL is a supported backend, so its tests never skip.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Postgres {
    pub url: String,
    cluster: Option<Cluster>,
}

struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
}

impl Postgres {
    pub fn start() -> Postgres {
        if let Ok(url) = std::env::var("LYRE_TEST_POSTGRES_URL") {
            return Postgres { url, cluster: None };
        }
        let bin = postgres_bin().unwrap_or_else(|| {
            panic!(
                "PostgreSQL is not installed: `apt-get install postgresql` (scripts/test-all.sh does), \
                 or set LYRE_TEST_POSTGRES_URL to a database the tests may write to"
            )
        });
        let dir =
            std::env::temp_dir().join(format!("lyre-pg-{}-{}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&dir).unwrap();
        let as_root = running_as_root();
        if as_root {
            run(Command::new("chown").arg("postgres").arg(&dir), "chown");
        }
        let port = free_port();
        let data = dir.join("data");
        let cluster = Cluster { bin: bin.clone(), dir: dir.clone() };
        pg(
            as_root,
            &bin.join("initdb"),
            &["-D", s(&data), "-A", "trust", "-U", "lyre", "--no-sync"],
            "initdb",
        );
        let opts = format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", dir.display());
        let log = dir.join("log");
        pg(
            as_root,
            &bin.join("pg_ctl"),
            &["-D", s(&data), "-l", s(&log), "-w", "-o", &opts, "start"],
            "pg_ctl start",
        );
        let port_s = port.to_string();
        pg(
            as_root,
            &bin.join("createdb"),
            &["-h", "127.0.0.1", "-p", &port_s, "-U", "lyre", "lyre"],
            "createdb",
        );
        Postgres { url: format!("postgres://lyre@127.0.0.1:{port}/lyre"), cluster: Some(cluster) }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(c) = &self.cluster {
            let data = c.dir.join("data");
            let _ = pg_status(
                running_as_root(),
                &c.bin.join("pg_ctl"),
                &["-D", s(&data), "-m", "immediate", "-w", "stop"],
            );
            let _ = std::fs::remove_dir_all(&c.dir);
        }
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `/usr/lib/postgresql/N/bin` of the newest installed version.
fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn running_as_root() -> bool {
    // The server refuses to run as root: then its tools run as the package's `postgres` user.
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false)
}

fn pg(as_root: bool, tool: &Path, args: &[&str], what: &str) {
    let out = pg_status(as_root, tool, args).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pg_status(as_root: bool, tool: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    if as_root {
        Command::new("runuser").args(["-u", "postgres", "--"]).arg(tool).args(args).current_dir("/").output()
    } else {
        Command::new(tool).args(args).output()
    }
}

fn run(cmd: &mut Command, what: &str) {
    let st = cmd.status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(st.success(), "{what} failed");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

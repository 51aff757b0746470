//! A throwaway PostgreSQL cluster for tests: initdb in a temporary directory,
//! a free port on 127.0.0.1, stopped and deleted when dropped (also when the
//! run fails).

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The variable tests read the connection URL from.
pub(crate) const URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";

const INSTALL_HINT: &str = "PostgreSQL server binaries (initdb, postgres) were not found. \
Install them with `apt-get update && apt-get install -y postgresql-15` (Debian/Ubuntu), \
or point STATEGRAPH_PG_BIN at the directory holding initdb";

pub(crate) struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    server: Option<Child>,
    // Set when running as root: the server must run as this user.
    run_as: Option<String>,
}

impl Cluster {
    pub(crate) fn start() -> Result<Self> {
        let bin = find_bin()?;
        let run_as = is_root().then(|| "postgres".to_owned());
        let dir =
            std::env::temp_dir().join(format!("stategraph-pg-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut cluster = Self {
            bin,
            dir,
            port: free_port()?,
            server: None,
            run_as,
        };
        if let Some(user) = &cluster.run_as {
            let status = Command::new("chown")
                .args([
                    &format!("{user}:{user}"),
                    &cluster.dir.display().to_string(),
                ])
                .status()
                .context("cannot run chown")?;
            if !status.success() {
                bail!(
                    "cannot hand {} to user {user} (does the user exist?)",
                    cluster.dir.display()
                );
            }
        }
        let data = cluster.dir.join("data");
        let output = cluster
            .command("initdb")
            .args([
                "-D",
                &data.display().to_string(),
                "-U",
                "stategraph",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .output()
            .context("cannot run initdb")?;
        if !output.status.success() {
            bail!(
                "initdb failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let log = std::fs::File::create(cluster.dir.join("server.log"))?;
        let server = cluster
            .command("postgres")
            .args([
                "-D",
                &data.display().to_string(),
                "-p",
                &cluster.port.to_string(),
            ])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                &format!("unix_socket_directories={}", cluster.dir.display()),
            ])
            .args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ])
            .args(["-c", "max_connections=200"])
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start postgres")?;
        cluster.server = Some(server);
        cluster.wait_ready()?;
        eprintln!("xtask: PostgreSQL running at {}", cluster.url());
        Ok(cluster)
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://stategraph@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs a query through psql, proving the server answers.
    pub(crate) fn check_connection(&self) -> Result<()> {
        let psql = Some(self.bin.join("psql"))
            .filter(|path| path.exists())
            .unwrap_or_else(|| PathBuf::from("psql"));
        let output = Command::new(psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "stategraph",
                "-d",
                "postgres",
            ])
            .args(["-tAc", "select version()"])
            .output()
            .context("cannot run psql")?;
        if !output.status.success() {
            bail!(
                "PostgreSQL does not answer: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        println!(
            "postgres: {}",
            String::from_utf8_lossy(&output.stdout).trim()
        );
        Ok(())
    }

    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        cmd.stdin(Stdio::null());
        cmd
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                // The port opens before recovery ends; psql-level readiness is
                // checked with pg_isready when it exists.
                let ready = Command::new(self.bin.join("pg_isready"))
                    .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                    .stdout(Stdio::null())
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(true);
                if ready {
                    return Ok(());
                }
            }
            if let Some(server) = &mut self.server
                && let Some(status) = server.try_wait()?
            {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                bail!("postgres exited early ({status}):\n{log}");
            }
            if Instant::now() > deadline {
                bail!("postgres did not accept connections within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SIGINT = PostgreSQL's "fast shutdown".
            let _ = Command::new("kill")
                .args(["-INT", &server.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if matches!(server.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn find_bin() -> Result<PathBuf> {
    if let Ok(dir) = std::env::var("STATEGRAPH_PG_BIN") {
        let dir = PathBuf::from(dir);
        if dir.join("initdb").exists() {
            return Ok(dir);
        }
        bail!(
            "STATEGRAPH_PG_BIN={} holds no initdb. {INSTALL_HINT}",
            dir.display()
        );
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    // Prefer 15, the version CI pins, then the newest.
    candidates.sort_by_key(|p| (p.to_string_lossy().contains("/15/"), p.clone()));
    if let Some(dir) = candidates
        .into_iter()
        .rev()
        .find(|dir| dir.join("initdb").exists())
    {
        return Ok(dir);
    }
    if let Some(path) = std::env::var_os("PATH")
        && let Some(dir) = std::env::split_paths(&path).find(|dir| dir.join("initdb").exists())
    {
        return Ok(dir);
    }
    bail!("{INSTALL_HINT}")
}

fn is_root() -> bool {
    Path::new("/proc/self")
        .metadata()
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

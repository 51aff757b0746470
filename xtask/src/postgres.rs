//! A throwaway PostgreSQL cluster for tests: initdb in a temporary directory,
//! a free port on 127.0.0.1, stopped and deleted when dropped (also when the
//! run fails); and a pgbouncer in transaction mode in front of it.

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The variable tests read the connection URL from.
pub(crate) const URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";
/// The variable tests read the URL of the transaction-mode pooler from.
pub(crate) const POOLER_URL_VAR: &str = "STATEGRAPH_TEST_PGBOUNCER_URL";

const POOLER_HINT: &str = "pgbouncer was not found. Install it with \
`apt-get update && apt-get install -y pgbouncer` (Debian/Ubuntu), or point \
STATEGRAPH_PGBOUNCER at the binary";

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

    /// A PostgreSQL tool of the cluster's installation, run as the owner.
    fn command(&self, tool: &str) -> Command {
        self.as_owner(&self.bin.join(tool))
    }

    /// `program` run as the cluster directory's owner (`runuser` when xtask
    /// runs as root: initdb, postgres and pgbouncer all refuse root).
    fn as_owner(&self, program: &Path) -> Command {
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

/// A pgbouncer in transaction mode in front of a [`Cluster`], with fewer
/// server connections than a saver's pool; stopped when dropped.
pub(crate) struct Pooler {
    port: u16,
    child: Child,
}

impl Pooler {
    pub(crate) fn url(&self) -> String {
        format!("postgres://stategraph@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        // SIGTERM = pgbouncer's immediate shutdown.
        stop(&mut self.child, "-TERM");
    }
}

impl Cluster {
    /// Starts pgbouncer (`pool_mode = transaction`, 4 server connections)
    /// on a free port, its files in the cluster's directory.
    pub(crate) fn start_pooler(&self) -> Result<Pooler> {
        let program = find_pgbouncer()?;
        let port = free_port()?;
        let config = self.dir.join("pgbouncer.ini");
        let users = self.dir.join("pgbouncer-users.txt");
        std::fs::write(&users, "\"stategraph\" \"\"\n")
            .with_context(|| format!("cannot write {}", users.display()))?;
        let ini = format!(
            "[databases]\n\
             postgres = host=127.0.0.1 port={server} dbname=postgres user=stategraph\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {users}\n\
             pool_mode = transaction\n\
             default_pool_size = 4\n\
             max_client_conn = 200\n\
             ignore_startup_parameters = extra_float_digits\n\
             logfile = {log}\n",
            server = self.port,
            users = users.display(),
            log = self.dir.join("pgbouncer.log").display(),
        );
        std::fs::write(&config, ini)
            .with_context(|| format!("cannot write {}", config.display()))?;
        let child = self
            .as_owner(&program)
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let mut pooler = Pooler { port, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = pooler.child.try_wait()? {
                let log =
                    std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default();
                bail!("pgbouncer exited early ({status}):\n{log}");
            }
            if Instant::now() > deadline {
                bail!("pgbouncer did not accept connections within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("xtask: pgbouncer (transaction mode) at {}", pooler.url());
        Ok(pooler)
    }
}

/// Stops a server started directly or through `runuser`: `signal` first
/// (runuser passes SIGTERM on, not SIGINT; a SIGKILL would reach runuser
/// only and orphan the server), SIGKILL after 10 s.
fn stop(child: &mut Child, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn find_pgbouncer() -> Result<PathBuf> {
    if let Ok(path) = std::env::var("STATEGRAPH_PGBOUNCER") {
        let path = PathBuf::from(path);
        if path.exists() {
            return Ok(path);
        }
        bail!(
            "STATEGRAPH_PGBOUNCER={} does not exist. {POOLER_HINT}",
            path.display()
        );
    }
    let system = PathBuf::from("/usr/sbin/pgbouncer");
    if system.exists() {
        return Ok(system);
    }
    if let Some(path) = std::env::var_os("PATH")
        && let Some(dir) = std::env::split_paths(&path).find(|dir| dir.join("pgbouncer").exists())
    {
        return Ok(dir.join("pgbouncer"));
    }
    bail!("{POOLER_HINT}")
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // A fast shutdown through pg_ctl: runuser does not pass SIGINT on.
            let data = self.dir.join("data");
            let _ = self
                .command("pg_ctl")
                .args(["stop", "-D", &data.display().to_string(), "-m", "fast"])
                .args(["-w", "-t", "10"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            stop(&mut server, "-TERM");
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

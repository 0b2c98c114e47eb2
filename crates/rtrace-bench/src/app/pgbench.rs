//! `pgbench`: PostgreSQL 15's TPC-B-like benchmark against a private cluster on tmpfs.
//!
//! `prepare` creates a fresh cluster (`APP_DIR/pg-<port>`, owned by `postgres`: the server
//! refuses root) with `initdb` and starts it with `pg_ctl`, both through `runuser`; the server
//! listens only on a unix socket in the cluster's directory (no TCP port to clash with a system
//! PostgreSQL), autovacuum and the logical replication launcher off (neither starts transactions
//! of its own during a run). A cluster left by a killed earlier invocation is found at that
//! fixed path, its server stopped and the cluster removed. `reset` re-creates pgbench's tables
//! (`pgbench -i`, which vacuums them) and checkpoints, so that every run starts from the same
//! data and no dirty buffers of the last one. The timed command is the client,
//! `pgbench -n -c C -j C -t N -l`, run as root over the socket; its per-transaction log gives
//! the latency percentiles. The server's processes are not in the timed tree: their CPU time is
//! `cpu_outside_ns`.

// Used by the `app` experiment, which is written beside these workloads.

use super::workload::{app_dir, lock, remove_tree, run_quiet, AppWorkload, Outcome, Timed};
use anyhow::{bail, ensure, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Debian's PostgreSQL 15 programs.
pub const BIN: &str = "/usr/lib/postgresql/15/bin";
/// The port in the socket's name (`.s.PGSQL.5439`); no TCP listener.
pub const PORT: u16 = 5439;
/// Transactions per client of one run: 4 to 7 s with 2 clients on 2 busy CPUs (7,000 to
/// 12,000 tps).
pub const DEFAULT_TRANSACTIONS: u64 = 25_000;
pub const DEFAULT_CLIENTS: u32 = 2;
/// Commits of pgbench's own first connection (see `ground_truth`).
const PGBENCH_OWN_COMMITS: u64 = 3;
const LOG_PREFIX: &str = "tx";
const USER: &str = "postgres";
const NEEDS: &str = "pgbench needs Debian's PostgreSQL 15: apt-get install postgresql-15";

/// How long the untimed steps took.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// initdb and the server's start.
    pub cluster: Option<Duration>,
    /// The last reset (`pgbench -i` and a checkpoint).
    pub reset: Option<Duration>,
}

/// pgbench against its own server.
pub struct Pgbench {
    pub clients: u32,
    /// Per client.
    pub transactions: u64,
    /// `pgbench -i -s`.
    pub scale: u32,
    bin: PathBuf,
    /// The cluster's directory: the socket's directory, the data directory `data/` in it.
    cluster: PathBuf,
    /// Where the timed run's per-transaction logs go.
    logs: PathBuf,
    postmaster: Option<u32>,
    pub prepared: Prepared,
    lock: Option<nix::fcntl::Flock<File>>,
}

impl Pgbench {
    pub fn new(clients: u32, transactions: u64) -> Pgbench {
        let dir = PathBuf::from(super::workload::APP_DIR);
        Pgbench {
            clients: clients.max(1),
            transactions: transactions.max(1),
            // pgbench's advice: at least one branch per client (they update a branch row each).
            scale: clients.max(1),
            bin: PathBuf::from(BIN),
            cluster: dir.join(format!("pg-{PORT}")),
            logs: dir.join("pgbench-log"),
            postmaster: None,
            prepared: Prepared::default(),
            lock: None,
        }
    }

    fn program(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    fn data(&self) -> PathBuf {
        self.cluster.join("data")
    }

    /// `runuser -u postgres -- BIN/program`, in the cluster's directory.
    fn as_postgres(&self, program: &str) -> Command {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", USER, "--"])
            .arg(self.program(program))
            .current_dir(&self.cluster);
        cmd
    }

    /// The client's connection arguments, as root over the socket.
    fn connect_args(&self) -> Vec<String> {
        vec![
            "-h".into(),
            self.cluster.display().to_string(),
            "-p".into(),
            PORT.to_string(),
            "-U".into(),
            USER.into(),
        ]
    }

    fn check(&self) -> Result<()> {
        for p in ["initdb", "pg_ctl", "postgres", "pgbench", "psql"] {
            if !self.program(p).is_file() {
                bail!("{NEEDS} ({} not found)", self.program(p).display());
            }
        }
        super::workload::require_programs("pgbench", "runuser", &["runuser"], "util-linux")?;
        nix::unistd::User::from_name(USER)
            .ok()
            .flatten()
            .with_context(|| format!("{NEEDS} (no user {USER})"))?;
        Ok(())
    }

    /// Stops the cluster's server if one runs (ours, or a killed earlier invocation's: we hold
    /// the lock) and removes the cluster.
    fn remove_cluster(&mut self) -> Result<()> {
        let pid_file = self.data().join("postmaster.pid");
        if pid_file.exists() {
            let stopped = run_quiet(
                self.as_postgres("pg_ctl")
                    .arg("stop")
                    .arg("-D")
                    .arg(self.data())
                    .args(["-m", "immediate", "-w", "-t", "30"]),
            );
            if let Err(e) = stopped {
                // pg_ctl says no server runs when the pid file is stale; else the server
                // did not stop.
                if let Some(pid) = postmaster_pid(&self.data()) {
                    if is_postmaster(pid) {
                        return Err(e.context(format!(
                            "cannot stop the PostgreSQL server (pid {pid}) of {}",
                            self.cluster.display()
                        )));
                    }
                }
            }
        }
        self.postmaster = None;
        remove_tree(&self.cluster)
    }

    fn create_cluster(&mut self) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let user = nix::unistd::User::from_name(USER)?.context("no user postgres")?;
        std::fs::create_dir(&self.cluster)
            .with_context(|| format!("cannot create {}", self.cluster.display()))?;
        nix::unistd::chown(&self.cluster, Some(user.uid), Some(user.gid))?;
        std::fs::set_permissions(&self.cluster, std::fs::Permissions::from_mode(0o700))?;
        run_quiet(self.as_postgres("initdb").arg("-D").arg(self.data()).args([
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "-U",
            USER,
        ]))?;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))?;
        write!(
            conf,
            "\n# rtrace-bench app\nlisten_addresses = ''\nport = {PORT}\n\
             unix_socket_directories = '{}'\nautovacuum = off\n\
             max_logical_replication_workers = 0\n",
            self.cluster.display()
        )?;
        Ok(())
    }

    fn start(&mut self) -> Result<()> {
        run_quiet(
            self.as_postgres("pg_ctl")
                .arg("start")
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.cluster.join("server.log"))
                .args(["-w", "-t", "60"]),
        )
        .with_context(|| {
            format!(
                "the PostgreSQL server did not start (its log: {})",
                self.cluster.join("server.log").display()
            )
        })?;
        let pid = postmaster_pid(&self.data())
            .with_context(|| format!("no pid in {}/postmaster.pid", self.data().display()))?;
        self.postmaster = Some(pid);
        Ok(())
    }

    /// `psql -c sql` as root over the socket.
    fn psql(&self, sql: &str) -> Result<String> {
        run_quiet(
            Command::new(self.program("psql"))
                .args(self.connect_args())
                .args(["-X", "-q", "-At", "-d", "postgres", "-c", sql]),
        )
    }

    /// The per-transaction latencies (µs) the run logged.
    fn latencies(&self) -> Result<Vec<u64>> {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(&self.logs)? {
            let entry = entry?;
            if !entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{LOG_PREFIX}."))
            {
                continue;
            }
            let text = std::fs::read_to_string(entry.path())?;
            all.extend(parse_log(&text).with_context(|| {
                format!("pgbench's transaction log {}", entry.path().display())
            })?);
        }
        Ok(all)
    }
}

impl AppWorkload for Pgbench {
    fn name(&self) -> &'static str {
        "pgbench"
    }

    fn describe(&self) -> String {
        format!(
            "PostgreSQL 15 pgbench TPC-B (sort of), scale {}, {} clients × {} transactions \
             (-n -c {} -j {}), unix socket, cluster on tmpfs, tables re-created before every run",
            self.scale, self.clients, self.transactions, self.clients, self.clients
        )
    }

    fn prepare(&mut self) -> Result<()> {
        if self.postmaster.is_some_and(is_postmaster) {
            return Ok(());
        }
        self.check()?;
        app_dir()?;
        if self.lock.is_none() {
            self.lock = Some(lock("pgbench")?);
        }
        let start = Instant::now();
        self.remove_cluster()?;
        self.create_cluster()?;
        self.start()?;
        self.prepared.cluster = Some(start.elapsed());
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let start = Instant::now();
        remove_tree(&self.logs)?;
        std::fs::create_dir(&self.logs)?;
        run_quiet(
            Command::new(self.program("pgbench"))
                .args(self.connect_args())
                .args(["-i", "-q", "-s", &self.scale.to_string(), "postgres"]),
        )?;
        self.psql("CHECKPOINT")?;
        self.prepared.reset = Some(start.elapsed());
        Ok(())
    }

    fn command(&self) -> Timed {
        let mut argv = vec![self.program("pgbench").display().to_string()];
        argv.extend(self.connect_args());
        let c = self.clients.to_string();
        argv.extend(
            [
                "-n",
                "-c",
                &c,
                "-j",
                &c,
                "-t",
                &self.transactions.to_string(),
                "-l",
                &format!("--log-prefix={}", self.logs.join(LOG_PREFIX).display()),
                "postgres",
            ]
            .map(String::from),
        );
        Timed {
            argv,
            env: Vec::new(),
            cwd: Some(self.logs.clone()),
        }
    }

    fn outcome(&mut self, stdout: &str, _stderr: &str) -> Result<Outcome> {
        let summary = parse_summary(stdout)?;
        let asked = u64::from(self.clients) * self.transactions;
        ensure!(
            summary.processed == asked && summary.failed == 0,
            "pgbench processed {} of {asked} transactions ({} failed)",
            summary.processed,
            summary.failed
        );
        let mut lat = self.latencies()?;
        ensure!(
            lat.len() as u64 == asked,
            "pgbench logged {} transactions, not {asked}",
            lat.len()
        );
        lat.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        Ok(Outcome {
            metrics: vec![
                ("tps".into(), summary.tps),
                ("latency_avg_ms".into(), summary.latency_avg_ms),
                ("latency_p50_ms".into(), ms(percentile(&lat, 50.0))),
                ("latency_p99_ms".into(), ms(percentile(&lat, 99.0))),
                ("transactions".into(), summary.processed as f64),
            ],
        })
    }

    fn cpu_outside_ns(&self) -> Result<Option<u64>> {
        let pid = self
            .postmaster
            .context("the PostgreSQL server is not running (prepare first)")?;
        // A client that just exited leaves its backend exiting: its time is the server's
        // once the postmaster reaped it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while backends_exiting(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        server_cpu_ns(pid).map(Some)
    }

    fn usdt_binaries(&self) -> Vec<PathBuf> {
        vec![self.program("postgres")]
    }

    fn ground_truth(&self, outcome: &Outcome) -> Option<(String, u64)> {
        let processed = outcome.get("transactions")? as u64;
        // Measured with bpftrace (transaction__start counts the same): every TPC-B
        // transaction commits once; each client's connection once more as its backend starts
        // (InitPostgres's catalog transaction); pgbench's own first connection 3 times (its
        // start, then `select count(*) from pgbench_branches` and the partitioning query of
        // GetTableInfo). Nothing else runs transactions: autovacuum and the replication
        // launcher are off. Counted over every process of the binary: a system PostgreSQL
        // running the same binary would add its own.
        Some((
            "postgresql:transaction__commit".into(),
            processed + u64::from(self.clients) + PGBENCH_OWN_COMMITS,
        ))
    }
}

impl Drop for Pgbench {
    fn drop(&mut self) {
        if self.lock.is_some() {
            if let Err(e) = self.remove_cluster() {
                eprintln!("rtrace-bench: {e:#}");
            }
            let _ = remove_tree(&self.logs);
        }
    }
}

/// The first line of `postmaster.pid`.
fn postmaster_pid(data: &Path) -> Option<u32> {
    std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

fn is_postmaster(pid: u32) -> bool {
    rtrace_tracer::procs::comm(pid).is_some_and(|c| c == "postgres")
}

/// Whether the postmaster has a backend (its title says `[local]`: a client's, over the
/// socket) or a zombie child: a client's, exiting, its CPU time not yet the postmaster's.
fn backends_exiting(pid: u32) -> bool {
    let Ok(all) = procfs::process::all_processes() else {
        return false;
    };
    all.filter_map(Result::ok).any(|p| {
        let Ok(stat) = p.stat() else { return false };
        stat.ppid == pid as i32
            && (stat.state == 'Z'
                || p.cmdline()
                    .is_ok_and(|c| c.iter().any(|a| a.contains("[local]"))))
    })
}

/// CPU time of the postmaster (its own and its reaped children's) and of its live children
/// (theirs and their reaped children's), in ns. Read until the postmaster's reaped share is the
/// same before and after its children are read: a child reaped in between is counted once.
fn server_cpu_ns(pid: u32) -> Result<u64> {
    use procfs::process::Process;
    let all = |s: &procfs::process::Stat| {
        s.utime + s.stime + s.cutime.max(0) as u64 + s.cstime.max(0) as u64
    };
    let parent = || -> Result<u64> {
        let stat = Process::new(pid as i32)
            .and_then(|p| p.stat())
            .with_context(|| format!("the PostgreSQL server (pid {pid}) is gone"))?;
        Ok(all(&stat))
    };
    for _ in 0..10 {
        let before = parent()?;
        let children: u64 = procfs::process::all_processes()?
            .filter_map(|p| p.ok()?.stat().ok())
            .filter(|s| s.ppid == pid as i32)
            .map(|s| all(&s))
            .sum();
        if parent()? == before {
            let ticks = before + children;
            return Ok(ticks * 1_000_000_000 / procfs::ticks_per_second());
        }
    }
    bail!("the PostgreSQL server's CPU time changed on every read")
}

/// What pgbench's summary says.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub processed: u64,
    pub failed: u64,
    pub latency_avg_ms: f64,
    pub tps: f64,
}

/// Reads `number of transactions actually processed: 8000/8000`, `number of failed
/// transactions: 0 (0.000%)`, `latency average = 1.234 ms`, `tps = 1620.5 (without initial
/// connection time)`.
pub fn parse_summary(stdout: &str) -> Result<Summary> {
    let field = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(str::trim)
            .with_context(|| format!("pgbench printed no `{prefix}`"))
    };
    let number = |s: &str, what: &str| -> Result<f64> {
        s.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("pgbench's {what} `{s}` is not a number"))
    };
    let processed = field("number of transactions actually processed:")?;
    let processed = processed
        .split('/')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .with_context(|| format!("pgbench's transactions processed `{processed}`"))?;
    // PostgreSQL 15 prints it (it retries no failures by default); older ones did not.
    let failed = match field("number of failed transactions:") {
        Ok(s) => number(s, "failed transactions")? as u64,
        Err(_) => 0,
    };
    Ok(Summary {
        processed,
        failed,
        latency_avg_ms: number(field("latency average =")?, "latency average")?,
        tps: number(field("tps =")?, "tps")?,
    })
}

/// The latencies (µs, the third column) of a per-transaction log (`-l`): `client_id
/// transaction_no time script_no time_epoch time_us`. A transaction logged as failed or skipped
/// is an error: the run did not do its work.
pub fn parse_log(text: &str) -> Result<Vec<u64>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let time = l.split_whitespace().nth(2);
            time.and_then(|t| t.parse().ok())
                .with_context(|| format!("a transaction without a latency: `{l}`"))
        })
        .collect()
}

/// The nearest-rank percentile `p` of sorted `values` (0 when empty).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    const STDOUT: &str = "\
pgbench (15.14 (Debian 15.14-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 2
maximum number of tries: 1
number of transactions per client: 4000
number of transactions actually processed: 8000/8000
number of failed transactions: 0 (0.000%)
latency average = 1.234 ms
initial connection time = 4.567 ms
tps = 1620.512345 (without initial connection time)
";

    #[test]
    fn summary() {
        let s = parse_summary(STDOUT).unwrap();
        assert_eq!(
            s,
            Summary {
                processed: 8000,
                failed: 0,
                latency_avg_ms: 1.234,
                tps: 1620.512345
            }
        );
        let short = STDOUT.replace("8000/8000", "7990/8000");
        assert_eq!(parse_summary(&short).unwrap().processed, 7990);
        let e = parse_summary("pgbench: error: connection refused\n").unwrap_err();
        assert!(format!("{e:#}").contains("actually processed"), "{e:#}");
    }

    #[test]
    fn log_and_percentiles() {
        let log = "0 0 1200 0 1700000000 123456\n0 1 800 0 1700000000 124456\n\n1 0 3000 0 1700000000 125000\n";
        assert_eq!(parse_log(log).unwrap(), [1200, 800, 3000]);
        assert!(parse_log("0 0 failed 0 1700000000 1\n").is_err());
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&sorted, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 99.0), 0);
    }

    #[test]
    fn outcome_checks_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Pgbench::new(2, 4000);
        p.logs = dir.path().to_path_buf();
        let line = "0 0 1000 0 1700000000 1\n";
        std::fs::write(dir.path().join("tx.1"), line.repeat(4000)).unwrap();
        std::fs::write(dir.path().join("tx.1.1"), line.repeat(4000)).unwrap();
        let o = p.outcome(STDOUT, "").unwrap();
        assert_eq!(o.get("transactions"), Some(8000.0));
        assert_eq!(o.get("latency_p99_ms"), Some(1.0));
        assert_eq!(
            p.ground_truth(&o),
            Some(("postgresql:transaction__commit".into(), 8005))
        );
        let short = STDOUT.replace("8000/8000", "7990/8000");
        assert!(p.outcome(&short, "").is_err());
        std::fs::remove_file(dir.path().join("tx.1.1")).unwrap();
        assert!(p.outcome(STDOUT, "").is_err());
    }

    #[test]
    fn command_runs_the_client_over_the_socket() {
        let p = Pgbench::new(2, 4000);
        let argv = p.command().argv;
        assert_eq!(argv[0], "/usr/lib/postgresql/15/bin/pgbench");
        let line = argv.join(" ");
        assert!(
            line.contains(
                "-h /dev/shm/rtrace-bench-app/pg-5439 -p 5439 -U postgres -n -c 2 -j 2 -t 4000 -l"
            ),
            "{line}"
        );
        assert_eq!(
            p.usdt_binaries(),
            [PathBuf::from("/usr/lib/postgresql/15/bin/postgres")]
        );
    }

    /// Root, about 20 s: `cargo test -p rtrace-bench pgbench_for_real -- --ignored
    /// --nocapture`; `RTRACE_PGBENCH_T=N` transactions per client.
    #[test]
    #[ignore]
    fn pgbench_for_real() {
        let n =
            std::env::var("RTRACE_PGBENCH_T").map_or(DEFAULT_TRANSACTIONS, |t| t.parse().unwrap());
        let c = std::env::var("RTRACE_PGBENCH_C").map_or(DEFAULT_CLIENTS, |c| c.parse().unwrap());
        let mut p = Pgbench::new(c, n);
        let start = Instant::now();
        p.prepare().unwrap();
        eprintln!("prepare {:?}", start.elapsed());
        eprintln!("{}", p.describe());
        // RTRACE_PGBENCH_GATE=PATH: after each reset, PATH.reset is written and the run waits
        // for PATH (a tracer attaches meanwhile); PATH.ran says it ran.
        let gate = std::env::var("RTRACE_PGBENCH_GATE").ok().map(PathBuf::from);
        let runs = std::env::var("RTRACE_PGBENCH_RUNS").map_or(2, |r| r.parse().unwrap());
        for _ in 0..runs {
            p.reset().unwrap();
            if let Some(gate) = &gate {
                std::fs::write(gate.with_extension("reset"), "").unwrap();
                while !gate.exists() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                std::fs::remove_file(gate).unwrap();
            }
            let t = p.command();
            let before = p.cpu_outside_ns().unwrap().unwrap();
            let cpu = crate::app::kbuild::tests::children_cpu_s();
            let start = Instant::now();
            let out = Command::new(&t.argv[0])
                .args(&t.argv[1..])
                .current_dir(t.cwd.as_ref().unwrap())
                .output()
                .unwrap();
            let took = start.elapsed();
            let cpu = crate::app::kbuild::tests::children_cpu_s() - cpu;
            let after = p.cpu_outside_ns().unwrap().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            let o = p.outcome(&stdout, &stderr).unwrap();
            eprintln!(
                "reset {:?}, run {took:?}, its CPU {cpu:.2} s, server CPU {:.3} s, {:?}, ground truth {:?}",
                p.prepared.reset,
                (after - before) as f64 / 1e9,
                o.metrics,
                p.ground_truth(&o)
            );
            if let Some(gate) = &gate {
                std::fs::write(gate.with_extension("ran"), format!("{:?}", o.metrics)).unwrap();
            }
        }
    }
}

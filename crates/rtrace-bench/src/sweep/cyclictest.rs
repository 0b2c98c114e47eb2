//! Running rt-tests' `cyclictest` as the cross-check, with the sweep's parameters. It starts held
//! (`__hold-exec`) so the tracer can filter on its pid before its first wake-up.

use super::{CyclictestChoice, Options};
use crate::hold::held_command;
use anyhow::{bail, Context, Result};
use rtrace_measure::cyclictest::{parse, CyclictestReport};
use rtrace_measure::spawn::interrupted;
use rtrace_measure::WorkloadError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A usable cyclictest.
#[derive(Debug, Clone)]
pub struct Cyclictest {
    pub path: PathBuf,
    /// First line of `--help`, e.g. `cyclictest V 2.40`.
    pub version: String,
}

/// cyclictest's HIST_MAX: it silently caps `--histogram` at this many buckets.
pub const MAX_BUCKETS: u64 = 1_000_000;

/// The LTTng cross-check's preload library, next to the workload binaries
/// (crate `rtrace-preload`).
pub const PRELOAD: &str = "librtrace_preload.so";

/// The C library this system's programs (cyclictest among them) run with: the one this
/// process mapped.
pub fn libc() -> Result<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").context("cannot read /proc/self/maps")?;
    let path = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("libc.so"))
        })
        .context("no libc.so mapped in this process: the uretprobe cross-check needs glibc")?;
    std::fs::canonicalize(path).with_context(|| format!("cannot resolve {path}"))
}

/// Options the cross-check needs (rt-tests 2.x).
const NEEDED: [&str; 4] = ["--json", "--nsecs", "--mainaffinity", "--histogram"];

/// Finds cyclictest and checks that it has the options we pass. The error is one line naming
/// the fix.
pub fn find(choice: &CyclictestChoice) -> Result<Option<Cyclictest>> {
    let path = match choice {
        CyclictestChoice::Off => return Ok(None),
        CyclictestChoice::At(p) => {
            if !p.is_file() {
                bail!(
                    "cyclictest not found at {}: give the path of rt-tests' cyclictest",
                    p.display()
                );
            }
            p.clone()
        }
        CyclictestChoice::OnPath => std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|d| d.join("cyclictest"))
            .find(|p| p.is_file())
            .context("cyclictest not found on PATH: apt-get install rt-tests (or pass --cyclictest PATH, or --no-cyclictest)")?,
    };
    let help = Command::new(&path)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", path.display()))?;
    let text =
        String::from_utf8_lossy(&help.stdout).into_owned() + &String::from_utf8_lossy(&help.stderr);
    if let Some(missing) = NEEDED.iter().find(|o| !text.contains(*o)) {
        bail!(
            "{} has no {missing} option: install rt-tests 2.x (cyclictest 2.40 works)",
            path.display()
        );
    }
    let version = text.lines().next().unwrap_or_default().trim().to_owned();
    Ok(Some(Cyclictest { path, version }))
}

/// The histogram options: 1-ns buckets (`--nsecs`) while the bound fits cyclictest's
/// [`MAX_BUCKETS`], 1-µs buckets beyond.
fn histogram_args(limit_us: u64) -> Vec<String> {
    if limit_us * 1000 <= MAX_BUCKETS {
        vec!["--nsecs".into(), format!("--histogram={}", limit_us * 1000)]
    } else {
        vec![format!("--histogram={limit_us}")]
    }
}

/// The thesis' command line with the sweep's parameters for `loops` wake-ups, writing its
/// result to `json`.
pub fn args(o: &Options, loops: u64, json: &Path) -> Vec<String> {
    let mut args = vec![
        "--mlockall".into(),
        format!("--priority={}", o.priority()),
        format!("--interval={}", o.interval_us),
        format!("--loops={loops}"),
        "--distance=0".into(),
        "--threads=1".into(),
        format!("--affinity={}", o.common.cpus.measured),
        format!("--mainaffinity={}", o.main_cpu),
        "--quiet".into(),
    ];
    args.extend(histogram_args(o.histogram_us));
    args.push(format!("--json={}", json.display()));
    args
}

/// Kills and reaps the child on drop (error paths, Ctrl-C).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs cyclictest with `args` (whose `--json` file is `json`): starts it held, calls `attach`
/// with its pid, lets it go, waits (watching for Ctrl-C), and parses its result. Its stdout (the
/// histogram dump) is discarded; its stderr goes to `stderr_file`.
pub fn run<A>(
    ct: &Cyclictest,
    args: &[String],
    env: &[(String, String)],
    json: &Path,
    stderr_file: &Path,
    attach: impl FnOnce(u32) -> Result<A>,
) -> Result<(CyclictestReport, A)> {
    if interrupted() {
        return Err(WorkloadError::Interrupted.into());
    }
    let _ = std::fs::remove_file(json);
    let mut command = vec![ct.path.display().to_string()];
    command.extend_from_slice(args);
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let stderr = std::fs::File::create(stderr_file)
        .with_context(|| format!("cannot create {}", stderr_file.display()))?;
    let child = held_command(&command, env, &read_end, None)?
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .context("cannot start cyclictest")?;
    drop(read_end);
    let mut running = Running(child);
    let attached = attach(running.0.id())?;
    let mut go = std::fs::File::from(write_end);
    if go.write_all(b"g").is_err() {
        bail!(
            "cyclictest exited before it started: {}",
            stderr_tail(stderr_file)
        );
    }
    drop(go);
    let status = loop {
        if interrupted() {
            return Err(WorkloadError::Interrupted.into());
        }
        if let Some(status) = running.0.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        bail!("cyclictest failed ({status}): {}", stderr_tail(stderr_file));
    }
    let text = std::fs::read_to_string(json).with_context(|| {
        format!(
            "cyclictest wrote no {}: {}",
            json.display(),
            stderr_tail(stderr_file)
        )
    })?;
    let report = parse(&text).with_context(|| format!("in {}", json.display()))?;
    Ok((report, attached))
}

/// The last lines of cyclictest's stderr, for error messages.
fn stderr_tail(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("distance is ignored"))
        .collect();
    match lines.len() {
        0 => format!("no message (see {})", file.display()),
        n => lines[n.saturating_sub(3)..].join(" / "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_buckets_while_they_fit_then_us_buckets() {
        assert_eq!(
            histogram_args(1000),
            vec!["--nsecs".to_string(), "--histogram=1000000".into()]
        );
        assert_eq!(histogram_args(5000), vec!["--histogram=5000".to_string()]);
    }

    #[test]
    fn stderr_tail_skips_the_distance_warning() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("e");
        std::fs::write(
            &f,
            "WARN: distance is ignored and set to 0, if histogram enabled\nboom\n",
        )
        .unwrap();
        assert_eq!(stderr_tail(&f), "boom");
        std::fs::write(&f, "").unwrap();
        assert!(stderr_tail(&f).starts_with("no message"));
    }
}

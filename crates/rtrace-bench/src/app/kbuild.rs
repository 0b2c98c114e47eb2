//! `kbuild`: part of a Linux kernel build, Piotrowski's Benchmark 2 at a size that fits a
//! round. Debian's `linux-source-6.1` tarball is extracted once onto tmpfs and kept between
//! invocations (`APP_DIR/linux-source-6.1`, stamped with the tarball it came from); an object
//! tree configured with `make tinyconfig` and prepared (`make prepare`: host tools, generated
//! headers) is kept beside it. Every run starts from a copy of that pristine tree (the paper
//! cleaned before each build; a copy is the same state every time, and takes 0.02 s) and times
//! `make -jN <directories>` (only compiling), or the whole `vmlinux` with `full`. Debian's
//! source configured with `tinyconfig` on x86 is a 32-bit (i386) kernel: no objtool, so no
//! libelf-dev needed.

// Used by the `app` experiment, which is written beside these workloads.

use super::workload::{
    app_dir, find_program, lock, remove_tree, run_quiet, AppWorkload, Outcome, Timed,
};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Debian's kernel source tarball.
pub const TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";
/// The directory the tarball holds, and the cache's name under `APP_DIR`.
const SOURCE: &str = "linux-source-6.1";
/// The file in the extracted tree that says which tarball it came from.
const STAMP: &str = ".rtrace-bench-source";
/// The directories built by default: about 16 s of CPU time, 8 to 9 s with `-j2` on 2 busy
/// CPUs (alone, in the same conditions: `lib/` 8 s, `mm/` 8.6 s, `kernel/` 12.8 s).
pub const DEFAULT_DIRS: &[&str] = &["init/", "lib/"];
/// The programs extracting and building the kernel need, and their Debian packages.
const TOOLS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
    ("cp", "coreutils"),
];

/// What one build makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// These directories' objects (`make dir/ …`).
    Dirs(Vec<String>),
    /// The whole kernel image (paper scale).
    Vmlinux,
}

impl Target {
    /// The default directories, or `vmlinux` when `full`.
    pub fn new(full: bool) -> Target {
        if full {
            Target::Vmlinux
        } else {
            Target::Dirs(DEFAULT_DIRS.iter().map(|d| d.to_string()).collect())
        }
    }

    fn make_args(&self) -> Vec<String> {
        match self {
            Target::Dirs(dirs) => dirs.clone(),
            Target::Vmlinux => vec!["vmlinux".into()],
        }
    }
}

/// How long the untimed preparation took, when this invocation did it (None: cached).
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    pub extract: Option<Duration>,
    pub configure: Option<Duration>,
}

/// The kernel build.
pub struct Kbuild {
    pub target: Target,
    pub jobs: usize,
    tarball: PathBuf,
    dir: PathBuf,
    /// `make kernelversion` of the source, once prepared.
    version: Option<String>,
    pub prepared: Prepared,
    lock: Option<nix::fcntl::Flock<File>>,
}

impl Kbuild {
    /// `make -j<CPUs>`: every CPU this process may run on.
    pub fn default_jobs() -> usize {
        std::thread::available_parallelism().map_or(1, usize::from)
    }

    /// Builds `target` with `make -j<jobs>`.
    pub fn new(target: Target, jobs: usize) -> Kbuild {
        Kbuild {
            target,
            jobs: jobs.max(1),
            tarball: PathBuf::from(TARBALL),
            dir: PathBuf::from(super::workload::APP_DIR),
            version: None,
            prepared: Prepared::default(),
            lock: None,
        }
    }

    fn source(&self) -> PathBuf {
        self.dir.join(SOURCE)
    }

    /// The configured and prepared object tree every run copies.
    fn pristine(&self) -> PathBuf {
        self.dir.join("kbuild-tinyconfig")
    }

    /// The object tree a run builds in.
    fn work(&self) -> PathBuf {
        self.dir.join("kbuild-obj")
    }

    /// Which tarball (path, size, mtime) an extracted tree comes from.
    fn stamp(&self) -> Result<String> {
        use std::os::unix::fs::MetadataExt;
        let m = self
            .tarball
            .metadata()
            .with_context(|| format!("cannot stat {}", self.tarball.display()))?;
        Ok(format!(
            "{} {} {}.{:09}\n",
            self.tarball.display(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ))
    }

    /// One error naming everything missing and the packages that install it.
    fn check(&self) -> Result<()> {
        let mut missing = Vec::new();
        let mut packages = Vec::new();
        if !self.tarball.is_file() {
            missing.push(self.tarball.display().to_string());
            packages.push("linux-source-6.1");
        }
        for (program, package) in TOOLS {
            if find_program(program).is_err() {
                missing.push(program.to_string());
                packages.push(package);
            }
        }
        if !missing.is_empty() {
            bail!(
                "kbuild needs Debian's linux-source-6.1 and the tools that build it: apt-get install {} (missing: {})",
                packages.join(" "),
                missing.join(", ")
            );
        }
        Ok(())
    }

    /// The source tree, extracted unless the cache holds this tarball's.
    fn extract(&mut self) -> Result<()> {
        let stamp = self.stamp()?;
        let source = self.source();
        if std::fs::read_to_string(source.join(STAMP)).is_ok_and(|s| s == stamp) {
            return Ok(());
        }
        // Extracted into a directory of its own and renamed once complete: a killed
        // extraction is never taken for the cache.
        let partial = self.dir.join(format!("{SOURCE}.partial"));
        remove_tree(&partial)?;
        std::fs::create_dir(&partial)?;
        let start = Instant::now();
        run_quiet(
            Command::new("tar")
                .arg("-xJf")
                .arg(&self.tarball)
                .arg("-C")
                .arg(&partial),
        )?;
        let tree = partial.join(SOURCE);
        if !tree.join("Makefile").is_file() {
            bail!("{} holds no {SOURCE}/Makefile", self.tarball.display());
        }
        std::fs::write(tree.join(STAMP), &stamp)?;
        remove_tree(&self.pristine())?;
        remove_tree(&source)?;
        std::fs::rename(&tree, &source)
            .with_context(|| format!("cannot rename {} to {}", tree.display(), source.display()))?;
        remove_tree(&partial)?;
        self.prepared.extract = Some(start.elapsed());
        Ok(())
    }

    /// `make O=<dir> args…` in the source tree.
    fn make(&self, objdir: &Path, args: &[String]) -> Command {
        let mut cmd = Command::new("make");
        cmd.arg("-C")
            .arg(self.source())
            .arg(format!("O={}", objdir.display()))
            .args(args);
        cmd
    }

    /// The pristine object tree: `make tinyconfig` and `make prepare`, unless cached for this
    /// source.
    fn configure(&mut self) -> Result<()> {
        let stamp = std::fs::read_to_string(self.source().join(STAMP))?;
        let pristine = self.pristine();
        if std::fs::read_to_string(pristine.join(STAMP)).is_ok_and(|s| s == stamp) {
            return Ok(());
        }
        let partial = self.dir.join("kbuild-tinyconfig.partial");
        remove_tree(&partial)?;
        std::fs::create_dir(&partial)?;
        let start = Instant::now();
        run_quiet(&mut self.make(&partial, &["tinyconfig".into()]))?;
        run_quiet(&mut self.make(&partial, &[format!("-j{}", self.jobs), "prepare".into()]))?;
        std::fs::write(partial.join(STAMP), &stamp)?;
        remove_tree(&pristine)?;
        std::fs::rename(&partial, &pristine)?;
        self.prepared.configure = Some(start.elapsed());
        Ok(())
    }
}

impl AppWorkload for Kbuild {
    fn name(&self) -> &'static str {
        "kbuild"
    }

    fn describe(&self) -> String {
        let version = self.version.as_deref().unwrap_or("6.1");
        let what = match &self.target {
            Target::Dirs(dirs) => format!("the objects of {}", dirs.join(" ")),
            Target::Vmlinux => "the whole kernel image".into(),
        };
        format!(
            "Linux {version} tinyconfig (i386), make -j{} {} ({what}, from a copy of a prepared object tree on tmpfs)",
            self.jobs,
            self.target.make_args().join(" ")
        )
    }

    fn prepare(&mut self) -> Result<()> {
        self.check()?;
        app_dir()?;
        if self.lock.is_none() {
            self.lock = Some(lock("kbuild")?);
        }
        self.extract()?;
        self.configure()?;
        let version = run_quiet(
            Command::new("make")
                .arg("-s")
                .arg("-C")
                .arg(self.source())
                .arg("kernelversion"),
        )?;
        self.version = Some(version.trim().to_string());
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        let work = self.work();
        remove_tree(&work)?;
        run_quiet(Command::new("cp").arg("-a").arg(self.pristine()).arg(&work))?;
        Ok(())
    }

    fn command(&self) -> Timed {
        let mut argv = vec![
            "make".to_string(),
            "-C".into(),
            self.source().display().to_string(),
            format!("O={}", self.work().display()),
            format!("-j{}", self.jobs),
        ];
        argv.extend(self.target.make_args());
        Timed {
            argv,
            env: Vec::new(),
            cwd: None,
        }
    }

    /// Fails unless the build made its archives (`DIR/built-in.a`, or `vmlinux`); counts the
    /// objects compiled.
    fn outcome(&mut self, _stdout: &str, _stderr: &str) -> Result<Outcome> {
        let work = self.work();
        let (made, under): (Vec<PathBuf>, Vec<PathBuf>) = match &self.target {
            Target::Dirs(dirs) => dirs
                .iter()
                .map(|d| (work.join(d).join("built-in.a"), work.join(d)))
                .unzip(),
            Target::Vmlinux => (vec![work.join("vmlinux")], vec![work.clone()]),
        };
        if let Some(missing) = made.iter().find(|p| !p.is_file()) {
            bail!("the build made no {}", missing.display());
        }
        let objects = under
            .iter()
            .flat_map(walkdir::WalkDir::new)
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "o"))
            .count();
        Ok(Outcome {
            metrics: vec![("objects".into(), objects as f64)],
        })
    }

    fn cpu_outside_ns(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    fn usdt_binaries(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

impl Drop for Kbuild {
    fn drop(&mut self) {
        // Only the run's object tree goes: the source and the pristine tree are the cache.
        if self.lock.is_some() {
            let _ = remove_tree(&self.work());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn target_and_command() {
        assert_eq!(Target::new(true), Target::Vmlinux);
        let k = Kbuild::new(Target::new(false), 2);
        let argv = k.command().argv;
        assert_eq!(
            argv[..5],
            [
                "make",
                "-C",
                "/dev/shm/rtrace-bench-app/linux-source-6.1",
                "O=/dev/shm/rtrace-bench-app/kbuild-obj",
                "-j2"
            ]
        );
        assert_eq!(argv[5..], *DEFAULT_DIRS);
        let full = Kbuild::new(Target::Vmlinux, 0);
        assert_eq!(full.command().argv[4..], ["-j1", "vmlinux"]);
        assert!(
            full.describe().contains("make -j1 vmlinux"),
            "{}",
            full.describe()
        );
    }

    /// User and system time of our reaped children, in s.
    pub fn children_cpu_s() -> f64 {
        let r =
            nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
        let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        s(r.user_time()) + s(r.system_time())
    }

    #[test]
    fn outcome_checks_the_archives() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = Kbuild::new(Target::Dirs(vec!["init/".into(), "lib/".into()]), 2);
        k.dir = dir.path().to_path_buf();
        for f in [
            "init/built-in.a",
            "init/main.o",
            "lib/built-in.a",
            "lib/math/gcd.o",
        ] {
            let p = k.work().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let o = k.outcome("", "").unwrap();
        assert_eq!(o.get("objects"), Some(2.0));
        std::fs::remove_file(k.work().join("lib/built-in.a")).unwrap();
        let e = format!("{:#}", k.outcome("", "").unwrap_err());
        assert!(e.contains("lib/built-in.a"), "{e}");
        k.target = Target::Vmlinux;
        assert!(k.outcome("", "").is_err());
    }

    #[test]
    fn a_missing_tarball_names_its_package() {
        let mut k = Kbuild::new(Target::new(false), 2);
        k.tarball = PathBuf::from("/nonexistent/linux-source-6.1.tar.xz");
        let e = format!("{:#}", k.check().unwrap_err());
        assert!(e.contains("apt-get install linux-source-6.1"), "{e}");
        assert!(
            e.contains("missing: /nonexistent/linux-source-6.1.tar.xz"),
            "{e}"
        );
    }

    /// Root, about a minute on a quiet machine (the first time: extraction too):
    /// `cargo test -p rtrace-bench kbuild_for_real -- --ignored --nocapture`;
    /// `RTRACE_KBUILD_DIRS="mm/ lib/"` times other directories.
    #[test]
    #[ignore]
    fn kbuild_for_real() {
        let target = match std::env::var("RTRACE_KBUILD_DIRS") {
            Ok(dirs) if dirs == "vmlinux" => Target::Vmlinux,
            Ok(dirs) => Target::Dirs(dirs.split_whitespace().map(String::from).collect()),
            Err(_) => Target::new(false),
        };
        let mut k = Kbuild::new(target, Kbuild::default_jobs());
        let start = Instant::now();
        k.prepare().unwrap();
        eprintln!("prepare {:?} ({:?})", start.elapsed(), k.prepared);
        eprintln!("{}", k.describe());
        for _ in 0..2 {
            let start = Instant::now();
            k.reset().unwrap();
            let reset = start.elapsed();
            let t = k.command();
            let cpu = children_cpu_s();
            let start = Instant::now();
            let out = Command::new(&t.argv[0])
                .args(&t.argv[1..])
                .output()
                .unwrap();
            let (took, cpu) = (start.elapsed(), children_cpu_s() - cpu);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let o = k.outcome("", "").unwrap();
            eprintln!(
                "reset {reset:?}, build {took:?}, its CPU {cpu:.1} s, {:?}",
                o.metrics
            );
        }
    }
}

//! The guest's root file system: our init and plan, busybox, rtrace-bench and its workloads,
//! cyclictest, LTTng's tools and kernel modules, each binary with the shared libraries `ldd`
//! names. Staged in a directory, then written as one uncompressed newc cpio (the kernel unpacks
//! it faster than a compressed one under TCG).

use super::cpio;
use super::kernel::Unpacked;
use crate::exec::exec;
use anyhow::{bail, Context, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest's PID 1 (busybox sh).
const INIT: &str = include_str!("../../guest/init");

/// What goes into one guest.
pub struct Contents<'a> {
    pub kernel: &'a Unpacked,
    /// `.ko` files for `/lib/modules/<release>/extra` (LTTng).
    pub lttng_modules: &'a Path,
    /// Directory of rtrace-bench and the workloads (the cargo release directory).
    pub bin_dir: &'a Path,
    /// `/etc/rtrace/plan`: the checks init runs.
    pub plan: &'a str,
    /// `/etc/rtrace/env`: `NAME=value` lines init exports.
    pub env: &'a [(String, String)],
}

/// Where rtrace-bench and the workloads live in the guest (rtrace-bench finds the workloads next
/// to itself).
pub const GUEST_BIN: &str = "/opt/rtrace";

/// Project binaries: (name, required).
const PROJECT: &[(&str, bool)] = &[
    ("rtrace-bench", true),
    ("workload", true),
    ("workload-lttng", false),
    // The sweep's LTTng cross-check preloads it into cyclictest.
    ("librtrace_preload.so", false),
];

/// Host programs copied to the same path: (path, Debian package, required).
const HOST: &[(&str, &str, bool)] = &[
    ("/bin/busybox", "busybox-static", true),
    ("/usr/bin/cyclictest", "rt-tests", true),
    ("/usr/bin/lttng", "lttng-tools", true),
    ("/usr/bin/lttng-sessiond", "lttng-tools", true),
    (
        "/usr/lib/x86_64-linux-gnu/lttng/libexec/lttng-consumerd",
        "lttng-tools",
        true,
    ),
    ("/usr/bin/babeltrace2", "babeltrace2", false),
    // `--tracer perf`: Debian's perf is the guests' kernel's own version (6.1).
    ("/usr/bin/perf", "linux-perf", true),
];

/// Libraries loaded with dlopen (ldd does not see them), as directory + file name prefix.
const DLOPENED: &[(&str, &str)] = &[
    // The tracepoint provider of an LTTng-UST application dlopens liblttng-ust-tracepoint.
    ("/usr/lib/x86_64-linux-gnu", "liblttng-ust-tracepoint.so"),
    ("/usr/lib/x86_64-linux-gnu", "liblttng-ust.so"),
    (
        "/usr/lib/x86_64-linux-gnu/babeltrace2/plugins",
        "babeltrace-plugin-",
    ),
];

/// Plain files lttng-sessiond needs.
const DATA: &[&str] = &["/usr/share/xml/lttng/session.xsd"];

/// Stages the guest root in `dir/root` and writes `dir/initramfs.cpio`; returns its path.
pub fn build(c: &Contents, dir: &Path) -> Result<PathBuf> {
    let root = dir.join("root");
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    // Debian's merged /usr: one copy of each library whichever path ldd names it by.
    for d in ["usr/bin", "usr/sbin", "usr/lib", "usr/lib64"] {
        std::fs::create_dir_all(root.join(d))?;
    }
    for (link, target) in [
        ("bin", "usr/bin"),
        ("sbin", "usr/sbin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
    ] {
        std::os::unix::fs::symlink(target, root.join(link))?;
    }
    for d in [
        "proc",
        "sys",
        "tmp",
        "run",
        "root",
        "results",
        "etc/rtrace",
        "var",
        GUEST_BIN.trim_start_matches('/'),
    ] {
        std::fs::create_dir_all(root.join(d))?;
    }
    std::os::unix::fs::symlink("../run", root.join("var/run"))?;
    write(&root, "init", INIT, 0o755)?;
    write(&root, "etc/rtrace/plan", c.plan, 0o644)?;
    let env: String = c
        .env
        .iter()
        .map(|(k, v)| format!("{k}={}\n", super::shell_quote(v)))
        .collect();
    write(&root, "etc/rtrace/env", &env, 0o644)?;
    write(
        &root,
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\n",
        0o644,
    )?;
    write(&root, "etc/group", "root:x:0:\ntracing:x:999:\n", 0o644)?;
    write(&root, "etc/hostname", "rtrace-guest\n", 0o644)?;

    let mut copier = Copier::new(&root);
    for &(name, required) in PROJECT {
        let src = c.bin_dir.join(name);
        if !src.exists() {
            if required {
                bail!(
                    "{} is missing: build it with `cargo build --workspace --release --bins --lib`",
                    src.display()
                );
            }
            eprintln!(
                "xtask: note: {} is not built; the guest lacks it",
                src.display()
            );
            continue;
        }
        let dest = Path::new(GUEST_BIN).join(name);
        copier.program(&src, &dest)?;
        // Release builds carry line tables (a third of the initramfs); notes and symbols stay.
        let copied = root.join(dest.strip_prefix("/").expect("absolute"));
        crate::exec::strip_debug(&copied, &copied)?;
    }
    for &(path, package, required) in HOST {
        let src = Path::new(path);
        if !src.exists() {
            if required {
                bail!("{path} is missing: apt-get install {package}");
            }
            eprintln!(
                "xtask: note: {path} is missing (apt-get install {package}); the guest lacks it"
            );
            continue;
        }
        copier.program(src, src)?;
    }
    for &(dir, prefix) in DLOPENED {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect();
        names.sort();
        for n in names {
            let p = Path::new(dir).join(n);
            copier.program(&p, &p)?;
        }
    }
    for &path in DATA {
        copier.file(Path::new(path), Path::new(path))?;
    }
    modules(c, &root)?;

    let cpio_path = dir.join("initramfs.cpio");
    let file = std::fs::File::create(&cpio_path)
        .with_context(|| format!("cannot create {}", cpio_path.display()))?;
    let mut w = cpio::Writer::new(std::io::BufWriter::new(file));
    // The kernel opens /dev/console for init before anything is mounted.
    w.dir("dev", 0o755)?;
    w.char_device("dev/console", 0o600, 5, 1)?;
    w.tree(&root)?;
    w.finish()?;
    Ok(cpio_path)
}

fn write(root: &Path, path: &str, text: &str, mode: u32) -> Result<()> {
    let p = root.join(path);
    std::fs::write(&p, text)?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// `lib/modules/<release>`: the kernel's module lists and the few modules the guest needs (9p),
/// our LTTng modules under extra/, and depmod's index (init's modprobe reads modules.dep, libkmod
/// in lttng-sessiond modules.dep.bin).
fn modules(c: &Contents, root: &Path) -> Result<()> {
    let release = &c.kernel.release;
    let dest = root.join("usr/lib/modules").join(release);
    std::fs::create_dir_all(dest.join("extra"))?;
    for e in std::fs::read_dir(&c.kernel.modules)? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), dest.join(e.file_name()))?;
        }
    }
    for m in super::kernel::MODULES {
        let to = dest.join("kernel").join(m);
        std::fs::create_dir_all(to.parent().expect("parent"))?;
        std::fs::copy(c.kernel.modules.join("kernel").join(m), &to)
            .with_context(|| format!("kernel module {m} is missing"))?;
    }
    for e in std::fs::read_dir(c.lttng_modules)? {
        let e = e?;
        std::fs::copy(e.path(), dest.join("extra").join(e.file_name()))?;
    }
    let depmod = ["/usr/sbin/depmod", "/sbin/depmod"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .context("depmod is missing: apt-get install kmod")?;
    exec(Command::new(depmod).arg("-b").arg(root).arg(release))
}

/// Copies programs with their shared libraries, each library once.
struct Copier<'a> {
    root: &'a Path,
    done: std::collections::HashSet<PathBuf>,
}

impl<'a> Copier<'a> {
    fn new(root: &'a Path) -> Self {
        Copier {
            root,
            done: Default::default(),
        }
    }

    /// Copies `src` (following symlinks) to `dest` in the guest.
    fn file(&mut self, src: &Path, dest: &Path) -> Result<()> {
        if !self.done.insert(dest.to_path_buf()) {
            return Ok(());
        }
        let to = self.root.join(dest.strip_prefix("/").unwrap_or(dest));
        std::fs::create_dir_all(to.parent().expect("parent"))?;
        std::fs::copy(src, &to)
            .with_context(|| format!("cannot copy {} into the guest", src.display()))?;
        Ok(())
    }

    /// Copies an ELF program or library and everything `ldd` says it loads.
    fn program(&mut self, src: &Path, dest: &Path) -> Result<()> {
        self.file(src, dest)?;
        for lib in ldd(src)? {
            self.file(&lib, &lib)?;
        }
        Ok(())
    }
}

/// The shared libraries (and loader) `path` loads; empty for a static program.
fn ldd(path: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(path)
        .output()
        .context("cannot run ldd (libc-bin)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // Static programs: "not a dynamic executable" (on stderr) with a failure status.
        return Ok(Vec::new());
    }
    parse_ldd(&text).with_context(|| format!("ldd {}", path.display()))
}

fn parse_ldd(text: &str) -> Result<Vec<PathBuf>> {
    let mut libs = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.contains("not found") {
            bail!("a library is missing on this machine: {line}");
        }
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.trim(),
            None => line,
        };
        let path = path.split_whitespace().next().unwrap_or("");
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libraries_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibnuma.so.1 => /lib/x86_64-linux-gnu/libnuma.so.1 (0x00007f8a)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f8b)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libnuma.so.1"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tlibx.so.1 => not found\n").is_err());
    }
}

//! LTTng kernel modules for a guest kernel: Debian's lttng-modules-dkms source built on the host
//! against the kernel's headers package (once per kernel release; cached).

use super::kernel::{self, Unpacked};
use crate::exec::exec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Builds (or finds in the cache) the modules for `kernel`; returns the directory of `.ko` files.
pub fn prepare(kernel: &Unpacked, cache: &Path) -> Result<PathBuf> {
    let dir = cache.join("lttng-modules").join(&kernel.release);
    let ko = dir.join("extra");
    let stamp = dir.join(".built");
    if stamp.exists() {
        return Ok(ko);
    }
    if Command::new("gcc-12").arg("--version").output().is_err() {
        bail!(
            "building LTTng modules for Debian's 6.1 kernels needs gcc-12: apt-get install gcc-12"
        );
    }
    let debs = kernel::download(&cache.join("debs"), &["lttng-modules-dkms".to_owned()])?;
    let src_root = cache.join("lttng-modules/source");
    {
        let _shared = kernel::shared();
        let stamp = src_root.join(".unpacked");
        if !stamp.exists() {
            if src_root.exists() {
                std::fs::remove_dir_all(&src_root)?;
            }
            kernel::unpack(&debs[0], &src_root)?;
            std::fs::write(&stamp, "")?;
        }
    }
    let source = std::fs::read_dir(src_root.join("usr/src"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("lttng-modules-"))
        })
        .context("lttng-modules-dkms holds no usr/src/lttng-modules-*")?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let build = dir.join("build");
    std::fs::create_dir_all(&dir)?;
    exec(Command::new("cp").arg("-a").arg(&source).arg(&build))?;
    fix_hrtimer_start(&build, &kernel.headers)?;

    let started = Instant::now();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let log = dir.join("build.log");
    eprintln!(
        "xtask: building {} for {} (log: {})",
        source.file_name().unwrap_or_default().to_string_lossy(),
        kernel.release,
        log.display()
    );
    let log_file = std::fs::File::create(&log)?;
    let status = Command::new("make")
        .arg(format!("-j{jobs}"))
        .arg(format!("KERNELDIR={}", kernel.headers.display()))
        .arg("modules")
        .current_dir(&build)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()
        .context("cannot run make: apt-get install make")?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        for l in tail.into_iter().rev() {
            eprintln!("  {l}");
        }
        bail!(
            "building LTTng modules for {} failed ({status}); log: {}",
            kernel.release,
            log.display()
        );
    }
    std::fs::create_dir_all(&ko)?;
    let mut n = 0;
    for m in find_ko(&build)? {
        let dest = ko.join(m.file_name().expect("file"));
        // Debug info makes them ten times larger; the guest only loads them.
        crate::exec::strip_debug(&m, &dest)?;
        n += 1;
    }
    eprintln!(
        "xtask: {n} LTTng modules for {} built in {:.0} s",
        kernel.release,
        started.elapsed().as_secs_f64()
    );
    std::fs::remove_dir_all(&build)?;
    std::fs::write(&stamp, "")?;
    Ok(ko)
}

/// The `.ko` files below `dir`, in path order.
fn find_ko(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let p = e?.into_path();
        if p.is_file() && p.extension().is_some_and(|x| x == "ko") {
            found.push(p);
        }
    }
    Ok(found)
}

const PROTO: &str =
    "\tTP_PROTO(struct hrtimer *hrtimer, enum hrtimer_mode mode),\n\n\tTP_ARGS(hrtimer, mode),\n";
const PROTO_ARMED: &str = "\tTP_PROTO(struct hrtimer *hrtimer, enum hrtimer_mode mode, bool was_armed),\n\n\tTP_ARGS(hrtimer, mode, was_armed),\n";
const LAST_FIELD: &str = "\t\tctf_integer(enum hrtimer_mode, mode, mode)\n\t)\n)\n#else";
const LAST_FIELD_ARMED: &str = "\t\tctf_integer(enum hrtimer_mode, mode, mode)\n\t\tctf_integer(bool, was_armed, was_armed)\n\t)\n)\n#else";

/// Debian's 6.1 kernels gained a `bool was_armed` argument in the `hrtimer_start` tracepoint
/// (6.1.192) that lttng-modules 2.13.9 does not know: the probe must take it too.
fn fix_hrtimer_start(src: &Path, headers: &Path) -> Result<()> {
    // The flavour's headers hold generated files; the tracepoint headers are in the common tree.
    let common = std::fs::read_to_string(headers.join("Makefile"))?;
    let common = common
        .trim()
        .strip_prefix("include ")
        .and_then(|m| m.strip_suffix("/Makefile"))
        .map(PathBuf::from)
        .unwrap_or_else(|| headers.to_path_buf());
    let kernel_side = std::fs::read_to_string(common.join("include/trace/events/timer.h"))
        .context("kernel headers lack include/trace/events/timer.h")?;
    if !kernel_side.contains("enum hrtimer_mode mode, bool was_armed") {
        return Ok(());
    }
    let path = src.join("include/instrumentation/events/timer.h");
    let probe = std::fs::read_to_string(&path)?;
    if probe.contains("was_armed") {
        return Ok(());
    }
    if probe.matches(PROTO).count() != 1 || probe.matches(LAST_FIELD).count() != 1 {
        bail!(
            "{}: hrtimer_start is not as in lttng-modules 2.13.9; adapt xtask/src/vm/lttng_modules.rs",
            path.display()
        );
    }
    eprintln!("xtask: lttng-modules: hrtimer_start takes `bool was_armed` on this kernel");
    std::fs::write(
        &path,
        probe
            .replace(PROTO, PROTO_ARMED)
            .replace(LAST_FIELD, LAST_FIELD_ARMED),
    )?;
    Ok(())
}

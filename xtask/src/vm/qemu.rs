//! Booting a guest under TCG: the console streams to our stderr (prefixed) and into a log, a
//! host directory is shared over virtio-9p (mount tag `results`) for the guest's result files,
//! and the guest's verdict comes back as QEMU's exit status through isa-debug-exit.

use anyhow::{bail, Context, Result};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Boot<'a> {
    /// Prefix of console lines, e.g. `rt`.
    pub label: &'a str,
    /// bzImage or PVH-capable ELF vmlinux.
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub cmdline: String,
    /// Shared with the guest as 9p mount tag `results`.
    pub share: &'a Path,
    /// Receives the console (ttyS0).
    pub console_log: &'a Path,
    pub timeout: Duration,
}

/// How a guest ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// init wrote 0 to isa-debug-exit.
    Success,
    /// init wrote a non-zero status.
    Failure,
    /// Kernel panic, reboot, QEMU error or timeout: no verdict, which is a failure too.
    None(String),
}

pub struct Outcome {
    pub verdict: Verdict,
    /// The console, line by line.
    pub console: Vec<String>,
    pub elapsed: Duration,
}

const QEMU: &str = "qemu-system-x86_64";
/// The values xtask/guest/init writes to the isa-debug-exit port.
const SUCCESS: i32 = 0x2a;
const FAILURE: i32 = 0x15;

fn said(console: &[String], line: &str) -> bool {
    console.iter().any(|l| l.trim() == line)
}

/// Boots and waits for the guest to power off (or the timeout).
pub fn boot(b: &Boot) -> Result<Outcome> {
    if Command::new(QEMU).arg("--version").output().is_err() {
        bail!("{QEMU} is missing: apt-get install qemu-system-x86");
    }
    let mut cmd = Command::new(QEMU);
    // One host thread runs both vCPUs in turn. Multi-threaded TCG hung 2 boots in 8 while the
    // kernel patched its own text (text_poke_bp for a tracepoint's static call, its IPI never
    // acknowledged by a vCPU spinning on the int3 in __schedule: an RCU stall); single-threaded
    // it was also faster here (PREEMPT_DYNAMIC plan 98 s vs 112 s) and leaves a core for the
    // other guest.
    cmd.args(["-accel", "tcg,thread=single", "-cpu", "max", "-m", "1024"])
        .args(["-smp", "2"])
        .args(["-nodefaults", "-display", "none", "-no-reboot"])
        .arg("-kernel")
        .arg(b.kernel)
        .arg("-initrd")
        .arg(b.initrd)
        .arg("-append")
        .arg(&b.cmdline)
        .args(["-serial", "stdio", "-fsdev"])
        .arg(format!(
            "local,id=results,security_model=none,path={}",
            b.share.display()
        ))
        .args(["-device", "virtio-9p-pci,fsdev=results,mount_tag=results"])
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let line: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| super::shell_quote(&a.to_string_lossy()))
        .collect();
    eprintln!("xtask: $ {}", line.join(" "));
    let started = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("cannot run {QEMU}"))?;
    let stdout = child.stdout.take().expect("piped");
    let label = b.label.to_owned();
    let log_path: PathBuf = b.console_log.to_path_buf();
    let reader = std::thread::spawn(move || -> Vec<String> {
        let mut log = std::fs::File::create(&log_path).ok();
        let mut lines = Vec::new();
        let mut r = std::io::BufReader::new(stdout);
        let mut buf = Vec::new();
        while r.read_until(b'\n', &mut buf).unwrap_or(0) > 0 {
            let line = String::from_utf8_lossy(&buf)
                .trim_end_matches(['\n', '\r'])
                .to_owned();
            buf.clear();
            eprintln!("[{label}] {line}");
            if let Some(f) = log.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            lines.push(line);
        }
        lines
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = started + b.timeout;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if Instant::now() > deadline {
            // Our own child: kill it by its handle.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let console = reader.join().unwrap_or_default();
    let qemu_err = err_reader.join().unwrap_or_default();
    let elapsed = started.elapsed();
    let verdict = match status.map(|s| s.code()) {
        None => Verdict::None(format!("no verdict within {} s", b.timeout.as_secs())),
        // isa-debug-exit: QEMU exits with (value << 1) | 1; init writes SUCCESS or FAILURE
        // (QEMU itself exits 1 on its own errors).
        Some(Some(c)) if c == (SUCCESS << 1) | 1 && said(&console, "init: success") => {
            Verdict::Success
        }
        Some(Some(c)) if c == (FAILURE << 1) | 1 => Verdict::Failure,
        Some(Some(0)) => Verdict::None(
            "the guest rebooted or the kernel panicked (QEMU exited 0) before init's verdict"
                .to_owned(),
        ),
        Some(c) => Verdict::None(format!(
            "QEMU failed ({}): {}",
            c.map_or("killed".to_owned(), |c| format!("exit {c}")),
            qemu_err.trim()
        )),
    };
    Ok(Outcome {
        verdict,
        console,
        elapsed,
    })
}

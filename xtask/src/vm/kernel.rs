//! Debian's kernels for the guests: package names resolved from the metapackages (the ABI number
//! in them moves), downloaded with `apt-get download`, unpacked into the cache.

use crate::exec::exec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A guest kernel flavour.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// linux-image-rt-amd64: PREEMPT_RT.
    Rt,
    /// linux-image-amd64: PREEMPT_DYNAMIC, booted with `preempt=full`.
    Preempt,
}

impl Kernel {
    pub const ALL: [Kernel; 2] = [Kernel::Rt, Kernel::Preempt];

    pub fn label(self) -> &'static str {
        match self {
            Kernel::Rt => "rt",
            Kernel::Preempt => "preempt",
        }
    }

    fn flavour(self) -> &'static str {
        match self {
            Kernel::Rt => "rt-amd64",
            Kernel::Preempt => "amd64",
        }
    }

    /// Kernel command line beyond the console and panic settings.
    pub fn cmdline(self) -> &'static str {
        match self {
            Kernel::Rt => "",
            Kernel::Preempt => "preempt=full",
        }
    }

    /// `environment.preemption` a result measured in this guest must show.
    pub fn expected_preemption(self) -> &'static str {
        match self {
            Kernel::Rt => "PREEMPT_RT",
            Kernel::Preempt => "PREEMPT_DYNAMIC (full)",
        }
    }
}

/// The kernel's own modules the guest loads: 9p over virtio, for the results directory.
pub const MODULES: &[&str] = &[
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio_pci.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "net/9p/9pnet.ko",
    "net/9p/9pnet_virtio.ko",
    "fs/netfs/netfs.ko",
    "fs/fscache/fscache.ko",
    "fs/9p/9p.ko",
];

/// A kernel unpacked in the cache.
pub struct Unpacked {
    /// `uname -r`, e.g. `6.1.0-56-rt-amd64`.
    pub release: String,
    /// What QEMU boots: the uncompressed ELF `vmlinux` when the kernel has a PVH entry point
    /// (QEMU jumps straight in: no firmware, no decompression under TCG; ~5 s less per boot),
    /// else Debian's bzImage `vmlinuz`.
    pub boot_image: PathBuf,
    /// `lib/modules/<release>`: modules.builtin, modules.order and the [`MODULES`] under kernel/.
    pub modules: PathBuf,
    /// The matching kernel headers (`KERNELDIR` for out-of-tree modules).
    pub headers: PathBuf,
}

/// The first `Depends:` of `pkg` whose name starts with `prefix`.
fn depends(pkg: &str, prefix: &str) -> Result<String> {
    let out = Command::new("apt-cache")
        .args(["depends", pkg])
        .output()
        .context("cannot run apt-cache: the guests need Debian's apt")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .map(|d| d.trim_matches(|c| c == '<' || c == '>'))
        .find(|d| d.starts_with(prefix))
        .map(str::to_owned)
        .with_context(|| {
            format!("apt-cache knows no `{prefix}*` dependency of {pkg}: run `apt-get update`")
        })
}

/// Serializes what kernels prepared in parallel share: the download directory, the unpacked
/// lttng-modules source.
pub fn shared() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Downloads `pkgs` into `dir` unless a `.deb` of each is there already; returns their paths.
pub fn download(dir: &Path, pkgs: &[String]) -> Result<Vec<PathBuf>> {
    let _shared = shared();
    std::fs::create_dir_all(dir)?;
    let find = |pkg: &str| -> Result<Option<PathBuf>> {
        for e in std::fs::read_dir(dir)? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if name.strip_prefix(pkg).is_some_and(|r| r.starts_with('_')) && name.ends_with(".deb")
            {
                return Ok(Some(dir.join(name)));
            }
        }
        Ok(None)
    };
    let missing: Vec<&String> = pkgs
        .iter()
        .filter(|p| find(p).ok().flatten().is_none())
        .collect();
    if !missing.is_empty() {
        exec(
            Command::new("apt-get")
                // Root's apt would hand the download to the `_apt` user, who cannot write here.
                .args(["download", "-q", "-o", "APT::Sandbox::User=root"])
                .args(&missing)
                .current_dir(dir),
        )
        .context("cannot download Debian packages: run `apt-get update` (needs deb.debian.org)")?;
    }
    pkgs.iter()
        .map(|p| find(p)?.with_context(|| format!("apt-get download left no {p}_*.deb")))
        .collect()
}

/// Unpacks all of `deb` into `dir`.
pub fn unpack(deb: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    exec(Command::new("dpkg-deb").arg("-x").arg(deb).arg(dir))
}

/// Unpacks only the members of `deb` matching the tar `patterns` into `dir`.
fn unpack_some(deb: &Path, dir: &Path, patterns: &[&str]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    eprintln!(
        "xtask: unpacking {} from {}",
        patterns.join(" "),
        deb.display()
    );
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run dpkg-deb")?;
    let status = Command::new("tar")
        .args(["-x", "--wildcards", "-C"])
        .arg(dir)
        .args(patterns)
        .stdin(dpkg.stdout.take().expect("piped"))
        .status()
        .context("cannot run tar")?;
    let dpkg_status = dpkg.wait()?;
    if !status.success() || !dpkg_status.success() {
        bail!(
            "cannot unpack {}: dpkg-deb {dpkg_status}, tar {status}",
            deb.display()
        );
    }
    Ok(())
}

/// Downloads and unpacks the kernel image and headers of `kernel` (once; cached in `cache`).
pub fn prepare(kernel: Kernel, cache: &Path) -> Result<Unpacked> {
    let image = depends(&format!("linux-image-{}", kernel.flavour()), "linux-image-")?;
    let release = image
        .strip_prefix("linux-image-")
        .expect("prefix")
        .to_owned();
    let dir = cache.join("kernels").join(&release);
    let vmlinuz = dir.join(format!("image/boot/vmlinuz-{release}"));
    let vmlinux = dir.join(format!("image/boot/vmlinux-{release}"));
    let unpacked = Unpacked {
        boot_image: if vmlinux.exists() {
            vmlinux.clone()
        } else {
            vmlinuz.clone()
        },
        modules: dir.join(format!("image/lib/modules/{release}")),
        headers: dir.join(format!("headers/usr/src/linux-headers-{release}")),
        release,
    };
    // Named after what is unpacked: a cache from an older xtask is unpacked again.
    let stamp = dir.join(".unpacked-9p-pvh");
    if stamp.exists() {
        return Ok(unpacked);
    }
    let headers = format!("linux-headers-{}", unpacked.release);
    let common = depends(&headers, "linux-headers-")?;
    let kbuild = depends(&headers, "linux-kbuild-")?;
    let debs = download(
        &cache.join("debs"),
        &[image.clone(), headers.clone(), common.clone(), kbuild],
    )?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let mut patterns = vec![
        "./boot/vmlinuz-*".to_owned(),
        "./lib/modules/*/modules.*".to_owned(),
    ];
    patterns.extend(
        MODULES
            .iter()
            .map(|m| format!("./lib/modules/*/kernel/{m}")),
    );
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    unpack_some(&debs[0], &dir.join("image"), &patterns)?;
    let hdr_root = dir.join("headers");
    for deb in &debs[1..] {
        unpack(deb, &hdr_root)?;
    }
    // The flavour's Makefile includes the common tree by absolute path: point it into the cache.
    let common_dir = hdr_root.join("usr/src").join(&common);
    std::fs::write(
        unpacked.headers.join("Makefile"),
        format!("include {}/Makefile\n", common_dir.display()),
    )?;
    for p in [&vmlinuz, &unpacked.modules, &unpacked.headers] {
        if !p.exists() {
            bail!("{} is missing after unpacking {}", p.display(), image);
        }
    }
    let config = std::fs::read_to_string(unpacked.headers.join(".config"))?;
    let unpacked = if config.lines().any(|l| l == "CONFIG_PVH=y") {
        decompress(&vmlinuz, &vmlinux)?;
        Unpacked {
            boot_image: vmlinux,
            ..unpacked
        }
    } else {
        unpacked
    };
    std::fs::write(&stamp, "")?;
    Ok(unpacked)
}

/// The ELF kernel inside a bzImage: its xz payload, decompressed (what the kernel's
/// scripts/extract-vmlinux does).
fn decompress(bzimage: &Path, vmlinux: &Path) -> Result<()> {
    let data = std::fs::read(bzimage)?;
    const XZ: &[u8] = b"\xfd7zXZ\x00";
    let at = data
        .windows(XZ.len())
        .position(|w| w == XZ)
        .with_context(|| format!("{}: no xz payload", bzimage.display()))?;
    let mut xz = Command::new("xz")
        .args(["-dc", "--single-stream"])
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(vmlinux)?)
        .spawn()
        .context("cannot run xz: apt-get install xz-utils")?;
    let mut stdin = xz.stdin.take().expect("piped");
    let payload = data[at..].to_vec();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &payload));
    let status = xz.wait()?;
    // xz stops reading after the stream: a broken pipe on the trailing bytes is expected.
    let _ = feeder.join();
    let mut magic = [0u8; 4];
    let elf = std::fs::File::open(vmlinux)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && &magic == b"\x7fELF";
    if !status.success() || !elf {
        bail!("cannot decompress {} ({status})", bzimage.display());
    }
    Ok(())
}

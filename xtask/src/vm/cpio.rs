//! A newc ("070701") cpio writer on the `cpio` crate: the initramfs format the kernel unpacks.
//! Every entry is owned by root; device nodes are written without existing on the host.

use anyhow::{bail, Context, Result};
use cpio::newc::Builder;
use libc::{S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Writes entries in order (a directory before what it holds); `finish` adds the trailer.
pub struct Writer<W: Write> {
    out: W,
    ino: u32,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer { out, ino: 1 }
    }

    /// One entry, with mtime 0 (reproducible archives); the crate pads it to 4 bytes.
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> Result<()> {
        let mut w = Builder::new(name.trim_start_matches('/'))
            .ino(self.ino)
            .mode(mode)
            .nlink(if mode & S_IFDIR == S_IFDIR { 2 } else { 1 })
            .rdev_major(rdev.0)
            .rdev_minor(rdev.1)
            .write(&mut self.out, u32::try_from(data.len())?);
        self.ino += 1;
        w.write_all(data)?;
        w.finish()?;
        Ok(())
    }

    pub fn dir(&mut self, name: &str, perm: u32) -> Result<()> {
        self.entry(name, S_IFDIR | perm, (0, 0), &[])
    }

    pub fn char_device(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> Result<()> {
        self.entry(name, S_IFCHR | perm, (major, minor), &[])
    }

    /// Adds everything below `root`, named relative to it, depth first in sorted order.
    pub fn tree(&mut self, root: &Path) -> Result<()> {
        for e in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
            let e = e.with_context(|| format!("cannot list {}", root.display()))?;
            let path = e.path();
            let name = path
                .strip_prefix(root)
                .expect("below root")
                .to_string_lossy();
            let meta = e.metadata()?;
            let perm = meta.permissions().mode() & 0o7777;
            let ft = meta.file_type();
            if ft.is_dir() {
                self.dir(&name, perm)?;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(path)?;
                let target = target.as_os_str().as_encoded_bytes();
                self.entry(&name, S_IFLNK | 0o777, (0, 0), target)?;
            } else if ft.is_file() {
                let data = std::fs::read(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                self.entry(&name, S_IFREG | perm, (0, 0), &data)?;
            } else {
                bail!(
                    "{}: not a file, directory or symlink (mode {:o})",
                    path.display(),
                    meta.mode()
                );
            }
        }
        Ok(())
    }

    /// Writes the trailer; returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.entry("TRAILER!!!", 0, (0, 0), &[])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let mut w = Writer::new(Vec::new());
        w.dir("dev", 0o755).unwrap();
        w.char_device("dev/console", 0o600, 5, 1).unwrap();
        let out = w.finish().unwrap();
        assert_eq!(out.len() % 4, 0);
        assert!(out.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("dev/console\0"));
        assert!(text.contains("TRAILER!!!\0"));
        // The console entry: char device 5:1 (rdevmajor, rdevminor at fields 10 and 11).
        // 110-byte header + "dev\0", padded to 4: the second header starts at 116.
        let console = &text[116..116 + 110];
        assert!(console.starts_with("070701"));
        assert_eq!(&console[14..22], "00002180"); // S_IFCHR | 0o600
        assert_eq!(&console[78..86], "00000005");
        assert_eq!(&console[86..94], "00000001");
    }

    /// A tree read back: every entry with its mode, links, device and data, in order.
    #[test]
    fn a_tree_reads_back_as_written() {
        let root = tempfile_dir();
        std::fs::create_dir(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/hostname"), "guest\n").unwrap();
        std::fs::set_permissions(root.join("etc/hostname"), PermissionsExt::from_mode(0o644))
            .unwrap();
        std::os::unix::fs::symlink("etc", root.join("conf")).unwrap();
        let mut w = Writer::new(Vec::new());
        w.char_device("dev/console", 0o600, 5, 1).unwrap();
        w.tree(&root).unwrap();
        let mut archive = std::io::Cursor::new(w.finish().unwrap());
        let mut seen = Vec::new();
        loop {
            let mut r = cpio::NewcReader::new(archive).unwrap();
            let e = r.entry();
            let (name, mode, nlink, rdev) = (
                e.name().to_owned(),
                e.mode(),
                e.nlink(),
                e.rdev_major() << 8 | e.rdev_minor(),
            );
            let (ino, trailer) = (e.ino(), e.is_trailer());
            let mut data = String::new();
            std::io::Read::read_to_string(&mut r, &mut data).unwrap();
            seen.push((ino, name, format!("{mode:o}"), nlink, rdev, data));
            archive = r.finish().unwrap();
            if trailer {
                break;
            }
        }
        let want = [
            (1, "dev/console", "20600", 1, 0x501, ""),
            (2, "conf", "120777", 1, 0, "etc"),
            (
                3,
                "etc",
                &format!("{:o}", 0o40000 | perm(&root.join("etc"))),
                2,
                0,
                "",
            ),
            (4, "etc/hostname", "100644", 1, 0, "guest\n"),
            (5, "TRAILER!!!", "0", 1, 0, ""),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|&(i, n, m, l, r, d)| (i, n.to_owned(), m.to_owned(), l, r, d.to_owned()))
            .collect();
        assert_eq!(seen, want);
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn perm(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-cpio-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }
}

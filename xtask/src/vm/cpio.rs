//! A newc ("070701") cpio writer: the initramfs format the kernel unpacks. Every entry is owned
//! by root; device nodes are written without existing on the host.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Writes entries in order (a directory before what it holds); `finish` adds the trailer.
pub struct Writer<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFCHR: u32 = 0o020_000;

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> Result<()> {
        let name = name.trim_start_matches('/');
        let header = format!(
            "070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}",
            self.ino,
            mode,
            0, // uid
            0, // gid
            if mode & S_IFDIR == S_IFDIR { 2 } else { 1 },
            0, // mtime: reproducible archives
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0, // check
        );
        self.ino += 1;
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> Result<()> {
        let n = (4 - self.written % 4) % 4;
        self.put(&[0; 3][..n as usize])
    }

    pub fn dir(&mut self, name: &str, perm: u32) -> Result<()> {
        self.entry(name, S_IFDIR | perm, (0, 0), &[])
    }

    pub fn char_device(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> Result<()> {
        self.entry(name, S_IFCHR | perm, (major, minor), &[])
    }

    /// Adds `root` and everything below it, named relative to `root`, in sorted order.
    pub fn tree(&mut self, root: &Path) -> Result<()> {
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(&dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .collect::<std::io::Result<_>>()?;
            entries.sort_by_key(|e| e.file_name());
            // Directories are pushed in reverse so they are written in sorted order, each
            // right after the listing that names it.
            let mut subdirs = Vec::new();
            for e in entries {
                let path = e.path();
                let name = path
                    .strip_prefix(root)
                    .expect("below root")
                    .to_string_lossy()
                    .into_owned();
                let meta = std::fs::symlink_metadata(&path)?;
                let perm = meta.permissions().mode() & 0o7777;
                let ft = meta.file_type();
                if ft.is_dir() {
                    self.dir(&name, perm)?;
                    subdirs.push(path);
                } else if ft.is_symlink() {
                    let target = std::fs::read_link(&path)?;
                    self.entry(
                        &name,
                        S_IFLNK | 0o777,
                        (0, 0),
                        target.as_os_str().as_encoded_bytes(),
                    )?;
                } else if ft.is_file() {
                    let data = std::fs::read(&path)
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
            stack.extend(subdirs.into_iter().rev());
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
}

//! Decoding of one `stapsdt` note descriptor (sys/sdt.h, note type 3):
//! `pc`, `base`, `semaphore` as address-sized words, then the NUL-terminated provider, name and
//! argument strings.

/// A decoded descriptor; addresses are raw (not base-adjusted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note<'a> {
    /// Address of the probe site as linked.
    pub pc: u64,
    /// Address of `.stapsdt.base` as linked (for the prelink adjustment).
    pub base: u64,
    /// Address of the semaphore, 0 if none.
    pub semaphore: u64,
    pub provider: &'a str,
    pub name: &'a str,
    /// Space-separated argument specs, possibly empty.
    pub args: &'a str,
}

impl<'a> Note<'a> {
    /// Decodes a descriptor of a 64-bit (or 32-bit) ELF file of the given byte order.
    pub fn decode(desc: &'a [u8], is_64: bool, little_endian: bool) -> Result<Note<'a>, String> {
        let word = if is_64 { 8 } else { 4 };
        // Three addresses plus, at the very least, three empty strings.
        if desc.len() < 3 * word + 3 {
            return Err(format!(
                "descriptor of {} bytes is shorter than the {} bytes of three {word}-byte \
                 addresses and three strings (rebuild the binary with sys/sdt.h)",
                desc.len(),
                3 * word + 3
            ));
        }
        let read = |i: usize| -> u64 {
            let b = &desc[i * word..(i + 1) * word];
            let mut buf = [0u8; 8];
            if little_endian {
                buf[..word].copy_from_slice(b);
                u64::from_le_bytes(buf)
            } else {
                buf[8 - word..].copy_from_slice(b);
                u64::from_be_bytes(buf)
            }
        };
        let mut rest = &desc[3 * word..];
        let mut next = |what: &str| -> Result<&'a str, String> {
            let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
                format!(
                    "the {what} string is not NUL-terminated (truncated note; rebuild the binary)"
                )
            })?;
            let s = std::str::from_utf8(&rest[..end])
                .map_err(|e| format!("the {what} string is not UTF-8: {e}"))?;
            rest = &rest[end + 1..];
            Ok(s)
        };
        let provider = next("provider")?;
        let name = next("name")?;
        let args = next("argument")?;
        if provider.is_empty() || name.is_empty() {
            return Err(format!(
                "empty provider or probe name (`{provider}:{name}`; rebuild the binary with \
                 sys/sdt.h)"
            ));
        }
        Ok(Note {
            pc: read(0),
            base: read(1),
            semaphore: read(2),
            provider,
            name,
            args,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor: three address words, then the strings.
    fn desc<const N: usize>(words: [[u8; N]; 3], strings: &[u8]) -> Vec<u8> {
        [words.concat(), strings.to_vec()].concat()
    }

    fn desc64(pc: u64, base: u64, sem: u64, strings: &[u8]) -> Vec<u8> {
        desc([pc, base, sem].map(u64::to_le_bytes), strings)
    }

    #[test]
    fn decodes_64_bit_little_endian() {
        let d = desc64(0x1187, 0x2004, 0x4010, b"prov\0two\0-4@%eax 8@-16(%rbp)\0");
        let n = Note::decode(&d, true, true).unwrap();
        assert_eq!(
            n,
            Note {
                pc: 0x1187,
                base: 0x2004,
                semaphore: 0x4010,
                provider: "prov",
                name: "two",
                args: "-4@%eax 8@-16(%rbp)",
            }
        );
        // Empty arguments.
        let d = desc64(1, 2, 0, b"p\0n\0\0");
        let n = Note::decode(&d, true, true).unwrap();
        assert_eq!((n.provider, n.name, n.args, n.semaphore), ("p", "n", "", 0));
    }

    #[test]
    fn decodes_32_bit_and_big_endian() {
        let words = [0x0804_901au32, 0x0804_a000, 0x0804_c004].map(u32::to_le_bytes);
        let d = desc(words, b"p\0s\0-4@%edx -4@$7\0");
        let n = Note::decode(&d, false, true).unwrap();
        let got = (n.pc, n.base, n.semaphore);
        assert_eq!(got, (0x0804_901a, 0x0804_a000, 0x0804_c004));
        assert_eq!(n.args, "-4@%edx -4@$7");

        let words = [0x10u64, 0x20, 0x30].map(u64::to_be_bytes);
        let d = desc(words, b"p\0n\0\0");
        let n = Note::decode(&d, true, false).unwrap();
        assert_eq!((n.pc, n.base, n.semaphore), (0x10, 0x20, 0x30));
    }

    #[test]
    fn rejects_malformed_descriptors() {
        let short = Note::decode(&[0u8; 26], true, true).unwrap_err();
        assert!(short.contains("shorter"), "{short}");
        let cases: [(&[u8], &str); 3] = [
            (b"p\0n\0-8@%rax", "argument string is not NUL-terminated"),
            (b"p\0\0\0", "empty provider or probe name"),
            (b"p\xff\0n\0\0", "provider string is not UTF-8"),
        ];
        for (strings, needle) in cases {
            let e = Note::decode(&desc64(1, 2, 0, strings), true, true).unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }
}

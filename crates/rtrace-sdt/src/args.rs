//! Argument specs of x86 USDT notes (`-8@%rdx`, `4@-12(%rbp)`, `-4@$5`) and their translation
//! to ftrace uprobe fetch-args.

use crate::{Arg, ArgLocation, SdtError};

/// x86 register names as they appear in specs, grouped by the `pt_regs` slot ftrace names them
/// by (arch/x86/kernel/ptrace.c `regs_offset_table`): 64-, 32-, 16- and 8-bit forms.
const REGISTERS: &[(&str, &[&str])] = &[
    ("ax", &["rax", "eax", "ax", "al"]),
    ("bx", &["rbx", "ebx", "bx", "bl"]),
    ("cx", &["rcx", "ecx", "cx", "cl"]),
    ("dx", &["rdx", "edx", "dx", "dl"]),
    ("si", &["rsi", "esi", "si", "sil"]),
    ("di", &["rdi", "edi", "di", "dil"]),
    ("bp", &["rbp", "ebp", "bp", "bpl"]),
    ("sp", &["rsp", "esp", "sp", "spl"]),
    ("r8", &["r8", "r8d", "r8w", "r8b", "r8l"]),
    ("r9", &["r9", "r9d", "r9w", "r9b", "r9l"]),
    ("r10", &["r10", "r10d", "r10w", "r10b", "r10l"]),
    ("r11", &["r11", "r11d", "r11w", "r11b", "r11l"]),
    ("r12", &["r12", "r12d", "r12w", "r12b", "r12l"]),
    ("r13", &["r13", "r13d", "r13w", "r13b", "r13l"]),
    ("r14", &["r14", "r14d", "r14w", "r14b", "r14l"]),
    ("r15", &["r15", "r15d", "r15w", "r15b", "r15l"]),
    ("ip", &["rip", "eip"]),
];

/// The `pt_regs` name ftrace uses for a spec register (`edx` → `dx`), if it is one we know.
fn pt_regs_name(reg: &str) -> Option<&'static str> {
    REGISTERS
        .iter()
        .find(|(_, names)| names.contains(&reg))
        .map(|(slot, _)| *slot)
}

fn bad(spec: &str, reason: impl Into<String>) -> SdtError {
    SdtError::BadArg {
        spec: spec.to_owned(),
        reason: reason.into(),
    }
}

/// Parses a space-separated argument string; an empty (or blank) string means no arguments.
pub(crate) fn parse_list(args: &str) -> Result<Vec<Arg>, SdtError> {
    args.split_whitespace().map(Arg::parse).collect()
}

/// Parses a decimal or `0x` hexadecimal integer with an optional sign, as gas prints them.
fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse::<u64>().ok()?
        }
        None => return None,
    };
    if neg {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        // Constants such as `$0xffffffffffffffff` are the bit pattern of a negative value.
        Some(magnitude as i64)
    }
}

/// Parses `%reg` (the `%` included) into the register name without `%`.
fn parse_register(spec: &str, operand: &str) -> Result<String, SdtError> {
    let name = operand.strip_prefix('%').ok_or_else(|| {
        bad(
            spec,
            format!("`{operand}` is not a register (expected `%name`)"),
        )
    })?;
    if pt_regs_name(name).is_none() {
        let why = if matches!(name, "ah" | "bh" | "ch" | "dh") {
            "high-byte registers cannot be fetched by ftrace or libbpf"
        } else {
            "unknown x86 register (only general-purpose registers and %rip are supported)"
        };
        return Err(bad(spec, format!("`%{name}`: {why}")));
    }
    Ok(name.to_owned())
}

/// Parses the part after `N@`.
fn parse_location(spec: &str, operand: &str) -> Result<ArgLocation, SdtError> {
    if operand.starts_with('%') {
        return Ok(ArgLocation::Register(parse_register(spec, operand)?));
    }
    if let Some(imm) = operand.strip_prefix('$') {
        return parse_int(imm).map(ArgLocation::Constant).ok_or_else(|| {
            bad(
                spec,
                format!(
                    "`${imm}` is not a numeric constant (symbolic constants are resolved at link \
                     time and are not in the note; pass a value computed at run time instead)"
                ),
            )
        });
    }
    if let Some(open) = operand.find('(') {
        let inner = operand[open + 1..]
            .strip_suffix(')')
            .ok_or_else(|| bad(spec, "memory operand without a closing `)`".to_owned()))?;
        if inner.contains(',') {
            return Err(bad(
                spec,
                "indexed memory operand (base,index,scale) cannot be fetched by ftrace; pass the \
                 value in a variable (e.g. copy the array element to a local) before the probe",
            ));
        }
        let prefix = &operand[..open];
        let offset = if prefix.is_empty() {
            0
        } else {
            parse_int(prefix).ok_or_else(|| {
                bad(
                    spec,
                    format!(
                        "displacement `{prefix}` is not a number (a symbol such as a global \
                         variable's name is resolved only at link time); pass the value in a \
                         local variable instead"
                    ),
                )
            })?
        };
        let base = parse_register(spec, inner)?;
        return Ok(ArgLocation::Memory { offset, base });
    }
    Err(bad(
        spec,
        format!(
            "`{operand}` is not `%reg`, `$imm`, `off(%reg)` or `(%reg)` (absolute and symbolic \
             addresses are not supported; pass the value in a local variable instead)"
        ),
    ))
}

impl Arg {
    /// Parses one x86 argument spec: `N@%reg`, `N@OFF(%reg)`, `N@(%reg)` or `N@$IMM`, where
    /// `N` is 1, 2, 4 or 8 and a negative `N` marks a signed value. `OFF` and `IMM` are decimal
    /// or `0x` hexadecimal with an optional sign.
    ///
    /// Without the `N@` prefix the size is 8 bytes unsigned, as systemtap assumes for version-3
    /// (`.note.stapsdt` type 3) notes written in assembler.
    ///
    /// Rejected with [`SdtError::BadArg`]: indexed operands (`(%rax,%rbx,8)`), symbolic
    /// operands (`sym(%rip)`, `$sym`), segment overrides, absolute addresses, high-byte
    /// registers (`%ah`) and non-general-purpose registers. A numeric `%rip`-relative operand
    /// parses (base `rip`) but has no ftrace form.
    pub fn parse(spec: &str) -> Result<Arg, SdtError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(bad(spec, "empty argument spec"));
        }
        let (size, signed, operand) = match spec.split_once('@') {
            Some((n, operand)) => {
                let (signed, digits) = match n.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, n.strip_prefix('+').unwrap_or(n)),
                };
                let size = match digits {
                    "1" => 1,
                    "2" => 2,
                    "4" => 4,
                    "8" => 8,
                    _ => {
                        return Err(bad(
                            spec,
                            format!("size `{n}` is not one of ±1, ±2, ±4, ±8 bytes"),
                        ))
                    }
                };
                (size, signed, operand)
            }
            None => (8, false, spec),
        };
        let location = parse_location(spec, operand)?;
        Ok(Arg {
            size,
            signed,
            location,
        })
    }

    /// The ftrace fetch type of the value: `u8`…`u64` or `s8`…`s64`.
    pub fn ftrace_type(&self) -> String {
        format!(
            "{}{}",
            if self.signed { 's' } else { 'u' },
            self.size as u32 * 8
        )
    }

    /// The ftrace uprobe fetch-arg for this argument (Documentation/trace/uprobetracer.rst),
    /// e.g. `%dx:s64`, `-12(%bp):u32`, `+0(%sp):u64`, `\5:s32`, `\-5:s32`.
    ///
    /// Registers use their `pt_regs` names (`%edx` → `%dx`, `%r8d` → `%r8`); a register
    /// narrower than 64 bits is fetched from its full slot with a narrower type, which on
    /// little-endian x86 reads its low bytes. Fails for `%rip`-relative memory: at the probe
    /// `%ip` is the probe address, not the next instruction's.
    pub fn ftrace_fetcharg(&self) -> Result<String, SdtError> {
        let ty = self.ftrace_type();
        let slot = |reg: &str| {
            pt_regs_name(reg)
                .ok_or_else(|| bad(&self.to_string(), format!("unknown register `%{reg}`")))
        };
        match &self.location {
            ArgLocation::Register(reg) => Ok(format!("%{}:{ty}", slot(reg)?)),
            ArgLocation::Memory { offset, base } => {
                let slot = slot(base)?;
                if slot == "ip" {
                    return Err(bad(
                        &self.to_string(),
                        "%rip-relative memory cannot be fetched by ftrace (at the probe %ip is \
                         the probe address, not the next instruction's); trace this probe \
                         without this argument",
                    ));
                }
                Ok(format!("{offset:+}(%{slot}):{ty}"))
            }
            ArgLocation::Constant(value) => Ok(format!("\\{value}:{ty}")),
        }
    }
}

/// Formats the spec back in note syntax (`-4@-12(%rbp)`).
impl std::fmt::Display for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.signed { "-" } else { "" };
        write!(f, "{sign}{}@", self.size)?;
        match &self.location {
            ArgLocation::Register(reg) => write!(f, "%{reg}"),
            ArgLocation::Memory { offset: 0, base } => write!(f, "(%{base})"),
            ArgLocation::Memory { offset, base } => write!(f, "{offset}(%{base})"),
            ArgLocation::Constant(value) => write!(f, "${value}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(size: u8, signed: bool, name: &str) -> Arg {
        Arg {
            size,
            signed,
            location: ArgLocation::Register(name.into()),
        }
    }

    fn mem(size: u8, signed: bool, offset: i64, base: &str) -> Arg {
        Arg {
            size,
            signed,
            location: ArgLocation::Memory {
                offset,
                base: base.into(),
            },
        }
    }

    fn imm(size: u8, signed: bool, value: i64) -> Arg {
        Arg {
            size,
            signed,
            location: ArgLocation::Constant(value),
        }
    }

    /// (spec, parsed, ftrace fetch-arg)
    fn table() -> Vec<(&'static str, Arg, &'static str)> {
        vec![
            ("-8@%rdx", reg(8, true, "rdx"), "%dx:s64"),
            ("8@%rdi", reg(8, false, "rdi"), "%di:u64"),
            ("-4@%edx", reg(4, true, "edx"), "%dx:s32"),
            ("2@%dx", reg(2, false, "dx"), "%dx:u16"),
            ("-1@%dl", reg(1, true, "dl"), "%dx:s8"),
            ("-4@%eax", reg(4, true, "eax"), "%ax:s32"),
            ("1@%al", reg(1, false, "al"), "%ax:u8"),
            ("8@%rbx", reg(8, false, "rbx"), "%bx:u64"),
            ("4@%ecx", reg(4, false, "ecx"), "%cx:u32"),
            ("8@%rsi", reg(8, false, "rsi"), "%si:u64"),
            ("1@%sil", reg(1, false, "sil"), "%si:u8"),
            ("-1@%dil", reg(1, true, "dil"), "%di:s8"),
            ("8@%rsp", reg(8, false, "rsp"), "%sp:u64"),
            ("8@%rbp", reg(8, false, "rbp"), "%bp:u64"),
            ("-4@%ebp", reg(4, true, "ebp"), "%bp:s32"),
            ("-8@%r8", reg(8, true, "r8"), "%r8:s64"),
            ("-4@%r8d", reg(4, true, "r8d"), "%r8:s32"),
            ("2@%r8w", reg(2, false, "r8w"), "%r8:u16"),
            ("1@%r8b", reg(1, false, "r8b"), "%r8:u8"),
            ("-8@%r12", reg(8, true, "r12"), "%r12:s64"),
            ("4@%r15d", reg(4, false, "r15d"), "%r15:u32"),
            ("8@%rip", reg(8, false, "rip"), "%ip:u64"),
            ("-4@-12(%rbp)", mem(4, true, -12, "rbp"), "-12(%bp):s32"),
            ("4@-12(%rbp)", mem(4, false, -12, "rbp"), "-12(%bp):u32"),
            ("8@-80(%rbx)", mem(8, false, -80, "rbx"), "-80(%bx):u64"),
            ("-8@8(%rsp)", mem(8, true, 8, "rsp"), "+8(%sp):s64"),
            ("8@(%rsp)", mem(8, false, 0, "rsp"), "+0(%sp):u64"),
            ("-1@-17(%rbp)", mem(1, true, -17, "rbp"), "-17(%bp):s8"),
            ("2@0x10(%r13)", mem(2, false, 16, "r13"), "+16(%r13):u16"),
            ("-4@-0x10(%rdi)", mem(4, true, -16, "rdi"), "-16(%di):s32"),
            ("-4@$5", imm(4, true, 5), "\\5:s32"),
            ("-4@$-5", imm(4, true, -5), "\\-5:s32"),
            ("4@$0", imm(4, false, 0), "\\0:u32"),
            ("8@$0x10", imm(8, false, 16), "\\16:u64"),
            (
                "-8@$-9223372036854775808",
                imm(8, true, i64::MIN),
                "\\-9223372036854775808:s64",
            ),
            ("-2@$+3", imm(2, true, 3), "\\3:s16"),
            // No size: 8 bytes unsigned (systemtap's rule for v3 notes).
            ("%rax", reg(8, false, "rax"), "%ax:u64"),
            ("-16(%rbp)", mem(8, false, -16, "rbp"), "-16(%bp):u64"),
            ("$42", imm(8, false, 42), "\\42:u64"),
            // i386 notes use 32-bit names; ftrace's pt_regs names are the same.
            ("-4@%esp", reg(4, true, "esp"), "%sp:s32"),
            ("4@8(%esp)", mem(4, false, 8, "esp"), "+8(%sp):u32"),
        ]
    }

    #[test]
    fn parse_and_translate_table() {
        for (spec, want, fetch) in table() {
            let got = Arg::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(got, want, "parse {spec}");
            assert_eq!(got.ftrace_fetcharg().unwrap(), fetch, "ftrace {spec}");
        }
    }

    #[test]
    fn display_round_trips() {
        for (spec, want, _) in table() {
            assert_eq!(Arg::parse(&want.to_string()).unwrap(), want, "{spec}");
        }
        assert_eq!(mem(4, true, -12, "rbp").to_string(), "-4@-12(%rbp)");
        assert_eq!(mem(8, false, 0, "rsp").to_string(), "8@(%rsp)");
        assert_eq!(imm(4, true, -5).to_string(), "-4@$-5");
        assert_eq!(reg(1, false, "r8b").to_string(), "1@%r8b");
    }

    #[test]
    fn rejects_unsupported_specs() {
        let cases = [
            ("-4@-20(%rbp,%rax,4)", "indexed"),
            ("8@(,%rax,8)", "indexed"),
            ("8@counter(%rip)", "symbol"),
            ("8@counter+8(%rip)", "symbol"),
            ("8@$counter", "symbolic constants"),
            ("8@0x601040", "absolute"),
            ("8@counter", "absolute"),
            ("8@%fs:0x28", "unknown x86 register"),
            ("1@%ah", "high-byte"),
            ("8@%xmm0", "unknown x86 register"),
            ("8@%x0", "unknown x86 register"),
            ("3@%rax", "size `3`"),
            ("16@%rax", "size `16`"),
            ("@%rax", "size ``"),
            ("-@%rax", "size `-`"),
            ("8@", "absolute"),
            ("8@-8(%rbp", "closing"),
            ("8@-8(rbp)", "not a register"),
            ("8@$", "not a numeric"),
            ("8@$1x", "not a numeric"),
            ("8@$99999999999999999999", "not a numeric"),
            ("", "empty"),
        ];
        for (spec, needle) in cases {
            match Arg::parse(spec) {
                Err(e @ SdtError::BadArg { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(needle), "{spec}: `{msg}` lacks `{needle}`");
                }
                other => panic!("{spec}: expected BadArg, got {other:?}"),
            }
        }
    }

    #[test]
    fn rip_relative_memory_parses_but_has_no_ftrace_form() {
        let arg = Arg::parse("8@16(%rip)").unwrap();
        assert_eq!(arg, mem(8, false, 16, "rip"));
        let err = arg.ftrace_fetcharg().unwrap_err();
        assert!(err.to_string().contains("%rip-relative"), "{err}");
        assert!(err.to_string().contains("`8@16(%rip)`"), "{err}");
    }

    #[test]
    fn unknown_register_in_a_constructed_arg_is_bad_arg() {
        let err = reg(8, false, "xmm0").ftrace_fetcharg().unwrap_err();
        assert!(matches!(err, SdtError::BadArg { .. }), "{err:?}");
    }

    #[test]
    fn parse_list_splits_on_whitespace() {
        assert_eq!(parse_list("").unwrap(), vec![]);
        assert_eq!(parse_list("   ").unwrap(), vec![]);
        assert_eq!(
            parse_list("8@%rdx 8@-80(%rbx)").unwrap(),
            vec![reg(8, false, "rdx"), mem(8, false, -80, "rbx")]
        );
        assert_eq!(
            parse_list("-4@$-5  -4@%eax").unwrap(),
            vec![imm(4, true, -5), reg(4, true, "eax")]
        );
        assert!(parse_list("8@%rdx 8@(%rax,%rbx,8)").is_err());
    }

    #[test]
    fn every_register_name_maps_to_a_pt_regs_slot() {
        for (slot, names) in REGISTERS {
            for name in *names {
                assert_eq!(pt_regs_name(name), Some(*slot), "{name}");
            }
        }
        assert_eq!(pt_regs_name("ah"), None);
    }

    #[test]
    fn ftrace_types() {
        assert_eq!(reg(1, false, "al").ftrace_type(), "u8");
        assert_eq!(reg(2, true, "ax").ftrace_type(), "s16");
        assert_eq!(reg(4, false, "eax").ftrace_type(), "u32");
        assert_eq!(reg(8, true, "rax").ftrace_type(), "s64");
    }
}

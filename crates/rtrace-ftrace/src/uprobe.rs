//! uprobe event definitions (`p:GROUP/EVENT PATH:OFFSET(REF_CTR) ARGS`) built from USDT sites.

use crate::Tracefs;
use anyhow::{bail, Context, Result};
use rtrace_sdt::Probe;
use rtrace_tracer::Hook;
use std::path::Path;
use std::time::{Duration, Instant};

/// One uprobe event to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UprobeDef {
    pub group: String,
    pub event: String,
    /// The line appended to `uprobe_events`.
    pub line: String,
}

/// One event per probe site (a probe inlined in several places has several sites), named
/// `NAME` or `NAME_<k>`, all in `group`.
pub fn definitions(group: &str, binary: &Path, sites: &[Probe]) -> Result<Vec<UprobeDef>> {
    plain_path(binary)?;
    sites
        .iter()
        .enumerate()
        .map(|(k, site)| {
            rtrace_tracer::validate_name("probe name", &site.name)?;
            rtrace_tracer::validate_name("provider", &site.provider)?;
            let event = if sites.len() == 1 {
                site.name.clone()
            } else {
                format!("{}_{k}", site.name)
            };
            let mut line = format!("p:{group}/{event} {}", site.ftrace_location(binary));
            for (i, arg) in site.args.iter().enumerate() {
                line.push_str(&format!(" arg{}={}", i + 1, arg.ftrace_fetcharg()?));
            }
            Ok(UprobeDef {
                group: group.to_owned(),
                event,
                line,
            })
        })
        .collect()
}

/// The event of a uprobe (`p:`) or uretprobe (`r:`) on the function at file offset `offset`,
/// named after the function (characters outside `[A-Za-z0-9_]` become `_`). It fetches the first
/// argument (`%di`) on entry and the return value on return: one 8-byte field, as USDT events.
pub fn function_definition(
    group: &str,
    binary: &Path,
    function: &str,
    offset: u64,
    ret: bool,
) -> Result<UprobeDef> {
    let path = plain_path(binary)?;
    let event = event_name(function);
    rtrace_tracer::validate_name("uprobe event", &event)?;
    let line = if ret {
        format!("r:{group}/{event} {path}:0x{offset:x} arg1=$retval:s64")
    } else {
        format!("p:{group}/{event} {path}:0x{offset:x} arg1=%di:s64")
    };
    Ok(UprobeDef {
        group: group.to_owned(),
        event,
        line,
    })
}

/// The uprobe events a USDT or uprobe hook needs, in `group` (`check` to check the hook
/// only); `None` for a hook that needs none.
pub fn hook_definitions(group: &str, hook: &Hook) -> Result<Option<Vec<UprobeDef>>> {
    Ok(Some(match hook {
        Hook::Usdt { binary, sites } => {
            hook.check_binary()?;
            definitions(group, binary, sites)?
        }
        Hook::Uprobe {
            binary,
            function,
            offset,
            ret,
        } => {
            hook.check_binary()?;
            vec![function_definition(group, binary, function, *offset, *ret)?]
        }
        _ => return Ok(None),
    }))
}

/// Creates `defs` in `fs`'s `uprobe_events`, each named `GROUP/EVENT` in `owned` as soon as it
/// exists (whoever owns `owned` removes them, also on error); their `(group, event)`.
pub fn register(
    fs: &Tracefs,
    defs: Vec<UprobeDef>,
    owned: &mut Vec<String>,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for def in defs {
        fs.append_event("uprobe_events", &def.line)?;
        owned.push(format!("{}/{}", def.group, def.event));
        out.push((def.group, def.event));
    }
    Ok(out)
}

/// Removes the uprobe events `owned` (`GROUP/EVENT`; it is emptied), each tried again for up to
/// `busy` while the kernel still holds it (EBUSY while it frees a dead perf's events); the first
/// error.
pub fn unregister(fs: &Tracefs, owned: &mut Vec<String>, busy: Duration) -> Result<()> {
    let mut first_err = None;
    for ev in owned.drain(..) {
        let start = Instant::now();
        while let Err(e) = fs.append_event("uprobe_events", &format!("-:{ev}")) {
            if start.elapsed() >= busy {
                first_err.get_or_insert(e);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Fails unless kernel tracepoint `category:name` has a valid name and, where tracefs is
/// mounted, exists.
pub fn check_tracepoint(category: &str, name: &str) -> Result<()> {
    rtrace_tracer::validate_name("tracepoint category", category)?;
    rtrace_tracer::validate_name("tracepoint", name)?;
    if let Some(fs) = Tracefs::find() {
        if !fs.path(format!("events/{category}/{name}")).exists() {
            bail!(
                "kernel tracepoint {category}:{name} does not exist here (see {}/available_events)",
                fs.root().display()
            );
        }
    }
    Ok(())
}

/// Checks every tracepoint of a script (`points`: category, name) as [`check_tracepoint`] does,
/// finding tracefs once (a `syscalls:*` script names ~720): one error names how many are
/// missing and the first of them.
pub fn check_tracepoints(points: &[(String, String)]) -> Result<()> {
    anyhow::ensure!(
        !points.is_empty(),
        "the tracepoint script names no tracepoint"
    );
    for (c, n) in points {
        rtrace_tracer::validate_name("tracepoint category", c)?;
        rtrace_tracer::validate_name("tracepoint", n)?;
    }
    let Some(fs) = Tracefs::find() else {
        return Ok(());
    };
    let missing: Vec<String> = points
        .iter()
        .filter(|(c, n)| !fs.path(format!("events/{c}/{n}")).exists())
        .map(|(c, n)| format!("{c}:{n}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} of the script's {} kernel tracepoints do not exist here ({}{}): expand the script again on this kernel (see {}/available_events)",
            missing.len(),
            points.len(),
            missing.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if missing.len() > 5 { ", ..." } else { "" },
            fs.root().display()
        );
    }
    Ok(())
}

/// The event id (`events/CATEGORY/NAME/id`, a raw event's `common_type` and a perf tracepoint
/// attribute's `config`) of each tracepoint of `points`, with its name `category:name`.
pub fn tracepoint_ids(fs: &Tracefs, points: &[(String, String)]) -> Result<Vec<(u64, String)>> {
    points
        .iter()
        .map(|(c, n)| {
            let text = fs.read(format!("events/{c}/{n}/id"))?;
            let id = text
                .trim()
                .parse::<u64>()
                .with_context(|| format!("unreadable id {text:?} of tracepoint {c}:{n}"))?;
            Ok((id, format!("{c}:{n}")))
        })
        .collect()
}

/// A tracefs event name for `function`: `[A-Za-z0-9_]`, not starting with a digit, at most 64
/// characters.
fn event_name(function: &str) -> String {
    let mut e: String = function
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !e.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        e.insert(0, '_');
    }
    e.truncate(64);
    e
}

/// The characters a path written to tracefs may contain. tracefs splits a definition at
/// whitespace, ends it at `#` (a comment), and reads `:` and `(` as the start of the offset and
/// the semaphore: any of them would make the uprobe land elsewhere than asked.
fn plain_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+')
}

/// `binary` as tracefs takes it: letters, digits and `/._-+` only (see [`plain_char`]).
fn plain_path(binary: &Path) -> Result<&str> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = binary.as_os_str().as_bytes();
    match bytes.iter().find(|&&b| !plain_char(b)) {
        None => Ok(binary.to_str().context("unreachable: ASCII path")?),
        Some(&b) => {
            let what = if b.is_ascii_graphic() || b == b' ' {
                format!("`{}`", b as char)
            } else {
                format!("byte 0x{b:02x}")
            };
            bail!(
                "binary path {} contains {what}, which tracefs would misread: make a symlink to the binary from a path of letters, digits and /._-+ only (e.g. `ln -s PATH /tmp/prog`) and pass that",
                binary.display()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_sdt::{Arg, ArgLocation};

    fn site(name: &str, offset: u64, sem: Option<u64>) -> Probe {
        Probe {
            provider: "prov".into(),
            name: name.into(),
            address: offset + 0x1000,
            offset,
            semaphore_address: sem.map(|s| s + 0x1000),
            semaphore_offset: sem,
            args: vec![Arg {
                size: 8,
                signed: true,
                location: ArgLocation::Register("rdx".into()),
            }],
        }
    }

    /// The definitions of `sites` in group `g` of `/bin/x`.
    fn defs(sites: &[Probe]) -> Vec<UprobeDef> {
        definitions("g", Path::new("/bin/x"), sites).unwrap()
    }

    #[test]
    fn one_site_keeps_the_probe_name_and_several_are_numbered() {
        let one = defs(&[site("ev", 0x2d230, None)]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].line, "p:g/ev /bin/x:0x2d230 arg1=%dx:s64");
        // A semaphore becomes the ref_ctr_offset.
        let two = defs(&[0x10, 0x20].map(|at| site("ev", at, Some(0x4010))));
        assert_eq!(two[0].line, "p:g/ev_0 /bin/x:0x10(0x4010) arg1=%dx:s64");
        assert_eq!(two[1].event, "ev_1");
    }

    #[test]
    fn function_entry_and_return_events() {
        let x = Path::new("/bin/x");
        let p = function_definition("g", x, "rtrace_marker_hit", 0x1a0, false).unwrap();
        assert_eq!(p.event, "rtrace_marker_hit");
        assert_eq!(p.line, "p:g/rtrace_marker_hit /bin/x:0x1a0 arg1=%di:s64");
        let r = function_definition("g", x, "foo.isra.0", 0x10, true).unwrap();
        assert_eq!(r.line, "r:g/foo_isra_0 /bin/x:0x10 arg1=$retval:s64");
        assert_eq!(event_name("9lives"), "_9lives");
        assert_eq!(event_name(&"a".repeat(100)).len(), 64);
        assert!(function_definition("g", Path::new("/bin/x y"), "f", 1, false).is_err());
    }

    #[test]
    fn hostile_names_and_paths_are_rejected() {
        use std::os::unix::ffi::OsStrExt;
        assert!(definitions("g", Path::new("/bin/x"), &[site("a/b", 1, None)]).is_err());
        let non_utf8 = std::ffi::OsStr::from_bytes(b"/tmp/\xff/prog");
        for bad in [
            Path::new("/bin/x y"),
            Path::new("/d/lnk:0x1000#/libc.so.6"),
            Path::new("/d/caf\u{e9}/prog"),
            Path::new("/d/a(0x10)/prog"),
            Path::new(non_utf8),
        ] {
            let e = definitions("g", bad, &[site("ev", 1, None)]).unwrap_err();
            assert!(e.to_string().contains("symlink"), "{e}");
            let e = function_definition("g", bad, "f", 1, false).unwrap_err();
            assert!(e.to_string().contains("symlink"), "{e}");
        }
        for fine in ["/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/a/b-c/d_e.f"] {
            assert!(definitions("g", Path::new(fine), &[site("ev", 1, None)]).is_ok());
        }
    }
}

//! uprobe event definitions (`p:GROUP/EVENT PATH:OFFSET(REF_CTR) ARGS`) built from USDT sites.

use anyhow::{bail, Context, Result};
use rtrace_sdt::Probe;
use std::path::Path;

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
    let path = binary.to_str().context("binary path is not UTF-8")?;
    if path.chars().any(char::is_whitespace) {
        bail!("binary path `{path}` contains whitespace, which tracefs cannot parse: move or link the binary to a path without spaces");
    }
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
            let mut line = format!("p:{group}/{event} {path}:0x{:x}", site.offset);
            if let Some(sem) = site.semaphore_offset {
                line.push_str(&format!("(0x{sem:x})"));
            }
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

    #[test]
    fn one_site_keeps_the_probe_name() {
        let defs = definitions("g_1", Path::new("/bin/x"), &[site("ev", 0x2d230, None)]).unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].line, "p:g_1/ev /bin/x:0x2d230 arg1=%dx:s64");
    }

    #[test]
    fn semaphore_becomes_ref_ctr_offset_and_sites_are_numbered() {
        let defs = definitions(
            "g",
            Path::new("/bin/x"),
            &[
                site("ev", 0x10, Some(0x4010)),
                site("ev", 0x20, Some(0x4010)),
            ],
        )
        .unwrap();
        assert_eq!(defs[0].line, "p:g/ev_0 /bin/x:0x10(0x4010) arg1=%dx:s64");
        assert_eq!(defs[1].event, "ev_1");
    }

    #[test]
    fn hostile_names_and_paths_are_rejected() {
        assert!(definitions("g", Path::new("/bin/x"), &[site("a/b", 1, None)]).is_err());
        assert!(definitions("g", Path::new("/bin/x y"), &[site("ev", 1, None)]).is_err());
    }
}

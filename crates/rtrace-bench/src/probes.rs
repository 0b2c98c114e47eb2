//! `rtrace-bench probes BIN [--symbols PATTERN]`: the USDT probes, or the functions, of any ELF
//! file, each with the instruction a uprobe there replaces and how the kernel runs it.

use anyhow::Result;
use rtrace_report::probes::Sited;
use rtrace_sdt::ProbeSites;
use serde::Serialize;
use std::path::Path;

pub fn run(binary: &Path, symbols: Option<&str>, json: bool) -> Result<i32> {
    let sites = ProbeSites::read(binary)?;
    if let Some(pattern) = symbols {
        let functions = rtrace_sdt::functions(binary, pattern)?;
        let functions = sited(&sites, functions, |f| f.offset)?;
        match json {
            true => print_json(&functions)?,
            false => print!("{}", rtrace_report::probes::functions(&functions)),
        }
        return Ok(0);
    }
    // Raw probes: list every probe, even those whose argument specs ftrace could not fetch.
    let probes = rtrace_sdt::raw_probes(binary)?;
    let mut probes = sited(&sites, probes, |p| p.offset)?;
    for p in &mut probes {
        let libbpf = sites.libbpf_usdt_nop5(p.item.offset);
        p.libbpf_site = libbpf.map(|offset| sites.at(offset)).transpose()?;
    }
    match json {
        true => print_json(&probes)?,
        false => print!("{}", rtrace_report::probes::table(&probes)),
    }
    Ok(0)
}

/// Each of `items` with the probe site at its file offset.
fn sited<T>(sites: &ProbeSites, items: Vec<T>, offset: fn(&T) -> u64) -> Result<Vec<Sited<T>>> {
    let site = |item: T| -> Result<Sited<T>> {
        let site = sites.at(offset(&item))?;
        Ok(Sited {
            item,
            site,
            libbpf_site: None,
        })
    };
    items.into_iter().map(site).collect()
}

fn print_json(items: &impl Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(items)?);
    Ok(())
}

//! `rtrace-bench probes BIN [--symbols PATTERN]`: the USDT probes, or the functions, of any ELF
//! file.

use anyhow::Result;
use std::path::Path;

pub fn run(binary: &Path, symbols: Option<&str>, json: bool) -> Result<i32> {
    if let Some(pattern) = symbols {
        let functions = rtrace_sdt::functions(binary, pattern)?;
        if json {
            println!("{}", serde_json::to_string_pretty(&functions)?);
        } else {
            print!("{}", rtrace_report::probes::functions(&functions));
        }
        return Ok(0);
    }
    // Raw probes: list every probe, even those whose argument specs ftrace could not fetch.
    let probes = rtrace_sdt::raw_probes(binary)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&probes)?);
    } else {
        print!("{}", rtrace_report::probes::table(&probes));
    }
    Ok(0)
}

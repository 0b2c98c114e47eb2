//! `rtrace-bench probes BIN [--symbols PATTERN]`: the USDT probes, or the functions, of any ELF
//! file.

use crate::cli::ProbesArgs;
use anyhow::Result;

pub fn run(args: &ProbesArgs) -> Result<i32> {
    if let Some(pattern) = &args.symbols {
        let functions = rtrace_sdt::functions(&args.binary, pattern)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&functions)?);
        } else {
            print!("{}", rtrace_report::probes::functions(&functions));
        }
        return Ok(0);
    }
    // Raw probes: list every probe, even those whose argument specs ftrace could not fetch.
    let probes = rtrace_sdt::raw_probes(&args.binary)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&probes)?);
    } else {
        print!("{}", rtrace_report::probes::table(&probes));
    }
    Ok(0)
}

//! `rtrace-bench probes BIN`: the USDT probes of any ELF file.

use crate::cli::ProbesArgs;
use anyhow::Result;

pub fn run(args: &ProbesArgs) -> Result<i32> {
    let probes = rtrace_sdt::probes(&args.binary)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&probes)?);
    } else {
        print!("{}", rtrace_report::probes::table(&probes));
    }
    Ok(0)
}

//! Attaches the eBPF backend to a USDT probe of every process for a while, then prints the
//! event stats; its output files go to the current directory. For poking at the loaded program
//! (`bpftool prog dump xlated name usdt_aggregate`).
//!
//! `cargo run -p rtrace-ebpf --example trace_usdt -- BINARY PROVIDER NAME [record|aggregate] [SECONDS]`

use anyhow::{Context, Result};
use rtrace_ebpf::{EbpfMode, EbpfTracer};
use rtrace_tracer::{Hook, RecordMode, Target, Tracer};
use std::path::PathBuf;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [binary, provider, name, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: trace_usdt BINARY PROVIDER NAME [record|aggregate] [SECONDS]");
    };
    let mode = match rest.first().map(String::as_str) {
        Some("record") => EbpfMode::Record,
        _ => EbpfMode::Aggregate,
    };
    let secs: u64 = rest
        .get(1)
        .map_or(Ok(10), |s| s.parse())
        .context("SECONDS")?;
    let out_dir = std::env::current_dir()?;
    let target = Target {
        hook: Hook::Usdt {
            binary: PathBuf::from(binary),
            sites: vec![rtrace_sdt::Probe {
                provider: provider.clone(),
                name: name.clone(),
                address: 0,
                offset: 0,
                semaphore_address: None,
                semaphore_offset: None,
                args: vec![],
            }],
        },
        pid: None,
        follow_children: true,
        skip_tid: None,
        out_dir: out_dir.clone(),
        consumer_cpus: vec![],
        buffer_size_kb: None,
        record: RecordMode::Stream,
    };
    let att = EbpfTracer::new(mode).attach(&target)?;
    eprintln!(
        "attached ({mode:?}) for {secs} s; output in {}",
        out_dir.display()
    );
    std::thread::sleep(std::time::Duration::from_secs(secs));
    println!("{:?}", att.finish()?);
    Ok(())
}

//! Lists the USDT probes of ELF files with their ftrace uprobe definitions:
//! `cargo run -p rtrace-sdt --example list -- /path/to/binary...`

use std::path::Path;

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: list ELF_FILE...");
        std::process::exit(2);
    }
    let mut failed = false;
    for path in &paths {
        let path = Path::new(path);
        match rtrace_sdt::raw_probes(path) {
            Ok(probes) => {
                for raw in probes {
                    let head = format!(
                        "{}:{} addr={:#x} off={:#x} sem={}",
                        raw.provider,
                        raw.name,
                        raw.address,
                        raw.offset,
                        raw.semaphore_offset
                            .map_or("none".to_owned(), |s| format!("{s:#x}"))
                    );
                    match raw.clone().parse_args() {
                        Ok(p) => {
                            let args = p
                                .ftrace_fetchargs()
                                .map(|a| {
                                    a.iter()
                                        .enumerate()
                                        .map(|(i, a)| format!(" arg{}={a}", i + 1))
                                        .collect::<String>()
                                })
                                .unwrap_or_else(|e| format!(" [{e}]"));
                            println!("{head}\t{}{args}", p.ftrace_location(path));
                        }
                        Err(e) => println!("{head}\t[{e}] args: {}", raw.args),
                    }
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}

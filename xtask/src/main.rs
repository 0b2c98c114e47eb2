//! Project automation: `cargo xtask ci` (everything tested, host and QEMU guests).

mod ci;
mod exec;
mod packages;
mod thesis;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "rtrace-bench project tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install what is missing, then fmt, clippy, unit tests, root integration tests, guest suites.
    Ci(ci::Options),
    /// The main job: install, build, run the tracer comparison, write a results directory.
    Thesis(thesis::Options),
}

fn main() {
    let result = match Cli::parse().command {
        Command::Ci(o) => ci::run(o),
        Command::Thesis(o) => thesis::run(o),
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

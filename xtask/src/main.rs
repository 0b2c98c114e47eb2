//! Project automation: `cargo xtask ci` (everything tested, host and QEMU guests).

mod browser;
mod ci;
mod exec;
mod packages;
mod thesis;
mod vm;

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
    ///
    /// The guest suites run xtask/guest/plan in QEMU on Debian's PREEMPT_RT and PREEMPT_DYNAMIC
    /// kernels. RTRACE_GUEST_FAIL=1 in the environment makes a guest check fail on purpose.
    Ci(ci::Options),
    /// The main job: install, build, run the tracer comparison, write a results directory.
    Thesis(thesis::Options),
    /// Load a report's index.html in headless Chromium (1400 x 900 px): fail when an image or
    /// figure file does not load, a figure is empty, a table is wider than the page, a section
    /// of the table of contents is missing, or the page logs an error; keep a screenshot.
    BrowserCheck(browser::Options),
    /// Run an rtrace-bench command in a QEMU guest on Debian's PREEMPT_RT or PREEMPT_DYNAMIC
    /// kernel; copy its results out.
    Vm(vm::Options),
}

fn main() {
    let result = match Cli::parse().command {
        Command::Ci(o) => ci::run(o),
        Command::Thesis(o) => thesis::run(o),
        Command::BrowserCheck(o) => browser::run(o),
        Command::Vm(o) => vm::run(o),
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

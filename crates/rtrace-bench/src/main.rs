//! rtrace-bench: parse → typed options → run → export. Errors print as one `Error:` line; exit
//! 1, or 128 + the signal when interrupted.

mod cli;
mod compare;
mod count;
mod cpus;
mod events;
mod hold;
mod npt;
mod options;
mod output;
mod probes;
mod progress;
mod rate;
mod report;
mod runner;
mod signals;
mod start;
mod sweep;
mod tracers;
mod usdt;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            if rtrace_measure::spawn::interrupted() {
                signals::exit_code()
            } else {
                1
            }
        }
    };
    // Everything this run created is removed by now: its lock file goes too.
    rtrace_tracer::owner::release();
    std::process::exit(code);
}

fn run(cli: cli::Cli) -> anyhow::Result<i32> {
    match cli.command {
        cli::Command::Usdt(args) => usdt::run(options::UsdtOptions::try_from(args)?),
        cli::Command::Count(args) => count::run(options::CountOptions::try_from(args)?),
        cli::Command::Probes(args) => probes::run(&args),
        cli::Command::CyclictestSweep(args) => {
            sweep::run(sweep::options::SweepOptions::try_from(args)?)
        }
        cli::Command::Rate(args) => rate::run(rate::RateOptions::try_from(args)?),
        cli::Command::Npt(args) => npt::run(npt::NptOptions::try_from(args)?),
        cli::Command::Events(args) => events::run(events::EventsOptions::try_from(args)?),
        cli::Command::Compare(args) => compare::run(&args),
        cli::Command::Report(args) => report::run(&args),
        cli::Command::HoldExec(args) => hold::run(&args),
    }
}

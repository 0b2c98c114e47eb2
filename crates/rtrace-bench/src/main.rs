//! rtrace-bench: parse → typed options → run → export. Errors print as one `Error:` line; exit
//! 1, or 128 + the signal when interrupted.

mod app;
mod compare;
mod count;
mod cpus;
mod decompose;
mod events;
mod flags;
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
mod sweep;
mod systemtap;
mod tracers;
mod tree;
mod usdt;
mod workload;

fn main() {
    cpus::usable_at_start();
    let code = match flags::run() {
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

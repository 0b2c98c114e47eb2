//! rtrace-bench: parse → typed options → run → export. Errors print as one `Error:` line; exit
//! 1, or 128 + the signal when interrupted.

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

use flags::Task;

fn main() {
    let code = match flags::task().and_then(run) {
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

fn run(task: Task) -> anyhow::Result<i32> {
    match task {
        Task::Usdt(o) => usdt::run(o),
        Task::Sweep(o) => sweep::run(o),
        Task::Rate(o) => rate::run(o),
        Task::Npt(o) => npt::run(o),
        Task::Events(o) => events::run(o),
        Task::Count(o) => count::run(o),
        Task::Probes {
            binary,
            symbols,
            json,
        } => probes::run(&binary, symbols.as_deref(), json),
        Task::Compare { a, b, json } => compare::run(&a, &b, json.as_deref()),
        Task::Report {
            results,
            out,
            left_out,
        } => report::run(&results, out.as_deref(), left_out),
        Task::HoldExec { env, command } => hold::run(&env, &command),
    }
}

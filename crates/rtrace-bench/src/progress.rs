//! A progress bar over the planned runs of an experiment, drawn on stderr only when stderr is a
//! terminal; otherwise every step is one plain line (logs and CI stay readable).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// How often the elapsed time and spinner redraw.
const TICK: Duration = Duration::from_millis(200);
const TEMPLATE: &str = "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {wide_msg}";

/// Progress over `steps` runs.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `steps` steps; hidden when stderr is not a terminal.
    pub fn new(steps: u64) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(steps), target);
        if !bar.is_hidden() {
            if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.enable_steady_tick(TICK);
        }
        Progress { bar }
    }

    /// Announces the step about to run: on the bar, or as a line when there is no bar.
    pub fn start(&self, what: String) {
        if self.bar.is_hidden() {
            eprintln!("running {what} ...");
        } else {
            self.bar.set_message(what);
        }
    }

    /// Counts the step that just ended.
    pub fn done(&self) {
        self.bar.inc(1);
    }

    /// One more step than planned (a run decided another).
    pub fn extend(&self, steps: u64) {
        self.bar.inc_length(steps);
    }
}

/// The bar goes when the runs end (before the report is printed), or fail.
impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_without_a_terminal_and_counts_anyway() {
        // cargo test captures stderr: no terminal, so no bar.
        let p = Progress::new(3);
        if !std::io::stderr().is_terminal() {
            assert!(p.bar.is_hidden());
        }
        p.start("ftrace case 1".into());
        p.done();
        assert_eq!(p.bar.position(), 1);
    }
}

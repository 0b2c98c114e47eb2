//! Loop threads that run at the same time (`--threads N`): the further threads are created and
//! pinned before the harness is told the workload is ready (a tracer that filters on the
//! process's threads sees them all), then released together with the first.

use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};

/// Runs `work` on the calling thread and on one further thread per CPU of `more`, each pinned
/// (and SCHED_FIFO `priority`, if given). `ready` runs once every thread is placed and returns
/// when the loops may start. Results in thread order, the calling thread's first. A failure
/// before the start (a thread not pinned, `ready` failing) releases the threads without
/// running `work` and is returned.
pub fn run<T: Send>(
    more: &[usize],
    priority: Option<i32>,
    ready: impl FnOnce() -> Result<()>,
    work: impl Fn() -> T + Sync,
) -> Result<Vec<T>> {
    let placed = Barrier::new(more.len() + 1);
    let start = Barrier::new(more.len() + 1);
    let failures = Mutex::new(Vec::<String>::new());
    let abort = AtomicBool::new(false);
    std::thread::scope(|s| {
        let others: Vec<_> = more
            .iter()
            .map(|&cpu| {
                let (placed, start, failures, abort, work) =
                    (&placed, &start, &failures, &abort, &work);
                s.spawn(move || {
                    if let Err(e) = crate::setup::place_thread(cpu, priority) {
                        failures
                            .lock()
                            .expect("not poisoned")
                            .push(format!("{e:#}"));
                    }
                    placed.wait();
                    start.wait();
                    (!abort.load(Ordering::SeqCst)).then(work)
                })
            })
            .collect();
        placed.wait();
        let failed = failures.lock().expect("not poisoned").clone();
        let go = if failed.is_empty() {
            ready()
        } else {
            Err(anyhow::anyhow!(failed.join("; ")))
        };
        abort.store(go.is_err(), Ordering::SeqCst);
        start.wait();
        go?;
        let mut out = vec![work()];
        for t in others {
            out.push(
                t.join()
                    .expect("a loop thread panicked")
                    .expect("not aborted"),
            );
        }
        Ok(out)
    })
}

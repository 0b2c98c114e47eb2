//! The thread that owns a BPF object from open to close (a skeleton borrows its storage, so its
//! whole lifecycle runs on one thread). `start` returns once the body reports its programs
//! attached (or with the reason they are not); `finish` and `Drop` tell it to stop and join it,
//! and the body's BPF objects are freed by the kernel before either returns.

use anyhow::{anyhow, Context, Result};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use crate::freed::{KernelIds, FREE_TIMEOUT};

/// What a worker's body gets: `attached()` to call once tracing, `stop` to wait on (a message:
/// finish; disconnected: drop), `ids` to fill with what it loaded.
pub type Body<T> =
    Box<dyn FnOnce(&mut dyn FnMut(), &Receiver<()>, &mut KernelIds) -> Result<T> + Send>;

pub struct Worker<T> {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Result<T>>>,
}

impl<T: Send + Default + 'static> Worker<T> {
    pub fn start(name: &str, body: Body<T>) -> Result<Worker<T>> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(body, ready_tx, stop_rx))
            .context("cannot start the eBPF thread")?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Worker {
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(join(thread).err().unwrap_or_else(|| {
                anyhow!("the eBPF thread ended before attaching (a bug: please report it)")
            })),
        }
    }

    /// Stops tracing and returns what the body made of it.
    pub fn finish(mut self) -> Result<T> {
        self.stop.take();
        join(self.thread.take().expect("worker thread"))
    }
}

impl<T> Drop for Worker<T> {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn join<T>(thread: JoinHandle<Result<T>>) -> Result<T> {
    thread
        .join()
        .map_err(|_| anyhow!("the eBPF thread panicked (a bug: please report it)"))?
}

/// Thread body. Reports setup errors through `ready` (then its own result is never read).
fn run<T: Default>(body: Body<T>, ready: Sender<Result<()>>, stop: Receiver<()>) -> Result<T> {
    let mut ready = Some(ready);
    let mut ids = KernelIds::default();
    let mut attached = || {
        if let Some(tx) = ready.take() {
            let _ = tx.send(Ok(()));
        }
    };
    let result = body(&mut attached, &stop, &mut ids);
    // Everything of ours is closed now; the kernel frees it after a grace period.
    ids.wait_until_freed(FREE_TIMEOUT);
    match (ready.take(), result) {
        (Some(tx), Err(e)) => {
            let _ = tx.send(Err(e));
            Ok(T::default())
        }
        (_, r) => r,
    }
}

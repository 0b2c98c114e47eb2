//! The USDT workload: `rtrace:event` fires in the loop, `rtrace:idle` never fires.
//! No LTTng library is linked into this binary (fairness of the comparison).

struct Usdt;

impl workload::Instrument for Usdt {
    const INSTRUMENTATION: &'static str = "usdt";

    #[inline(always)]
    fn event(i: u64) {
        probe::probe!(rtrace, event, i as isize);
    }

    #[inline(never)]
    fn idle(i: u64) {
        probe::probe!(rtrace, idle, i as isize);
    }
}

fn main() {
    workload::main::<Usdt>()
}

//! The probe listing of `rtrace-bench probes`.

use crate::table::Table;
use rtrace_sdt::Probe;

pub fn table(probes: &[Probe]) -> String {
    if probes.is_empty() {
        return "no USDT probes (.note.stapsdt is absent or empty)\n".into();
    }
    let mut t = Table::new(
        &[
            "provider",
            "name",
            "address",
            "file offset",
            "semaphore",
            "args",
        ],
        2,
    );
    for p in probes {
        t.row(vec![
            p.provider.clone(),
            p.name.clone(),
            format!("0x{:x}", p.address),
            format!("0x{:x}", p.offset),
            p.semaphore_offset
                .map_or("-".into(), |s| format!("0x{s:x}")),
            p.args.len().to_string(),
        ]);
    }
    t.render()
}

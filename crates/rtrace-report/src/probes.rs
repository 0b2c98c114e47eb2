//! The listings of `rtrace-bench probes`.

use crate::table::Table;
use rtrace_sdt::{Function, RawProbe};

/// USDT probe sites with offsets, semaphores and argument specs.
pub fn table(probes: &[RawProbe]) -> String {
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
            p.args.clone(),
        ]);
    }
    t.render()
}

/// Function symbols with the file offsets uprobes take.
pub fn functions(functions: &[Function]) -> String {
    if functions.is_empty() {
        return "no matching function symbols\n".into();
    }
    let mut t = Table::new(&["function", "address", "file offset", "size"], 1);
    for f in functions {
        t.row(vec![
            f.name.clone(),
            format!("0x{:x}", f.address),
            format!("0x{:x}", f.offset),
            f.size.to_string(),
        ]);
    }
    t.render()
}

//! Reading the per-CPU maps after the programs are detached: lost events, and the aggregate
//! counters and histogram (written to the run's output).

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use std::path::Path;

use crate::plan::bucket_range;
use crate::skel;

/// The `u64` value at `key` of a per-CPU map, summed over CPUs (ring-buffer reservations that
/// failed, the events suite's counts).
pub fn sum_percpu(map: &dyn MapCore, key: &[u8]) -> Result<u64> {
    let name = map.name().to_string_lossy();
    let short = || format!("short value in the BPF map {name}");
    map.lookup_percpu(key, MapFlags::ANY)
        .with_context(|| format!("cannot read the BPF map {name}"))?
        .unwrap_or_default()
        .iter()
        .map(|v| {
            let b = v.get(..8).with_context(short)?;
            Ok(u64::from_ne_bytes(b.try_into().expect("8 bytes")))
        })
        .sum()
}

/// The floor program's global hit counter (`floor_hits` in `.bss`).
pub fn floor_hits(skel: &skel::RtraceSkel<'_>) -> Result<u64> {
    let bss = skel
        .maps
        .bss_data
        .as_deref()
        .context("the BPF object has no .bss (a build bug: rebuild rtrace-bench)")?;
    Ok(bss.floor_hits)
}

/// Reads the per-CPU counters and, with `hist`, the histograms, writes them to `path`; returns
/// the total count.
pub fn write_aggregate(skel: &skel::RtraceSkel<'_>, path: &Path, hist_kept: bool) -> Result<u64> {
    use std::fmt::Write as _;
    let per_cpu = skel
        .maps
        .aggs
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("cannot read the aggregate map")?
        .unwrap_or_default();
    let mut total = 0u64;
    let mut hist = [0u64; skel::RTRACE_HIST_BUCKETS];
    let mut text = String::from("# per-CPU hit counts: cpu count\n");
    for (cpu, raw) in per_cpu.iter().enumerate() {
        let a: skel::types::rtrace_agg =
            skel::from_bytes(raw).context("short value in the aggregate map")?;
        total += a.count;
        for (h, v) in hist.iter_mut().zip(a.hist) {
            *h += v;
        }
        let _ = writeln!(text, "cpu {cpu} {}", a.count);
    }
    text.push_str("# log2 histogram of the argument: low high count (high exclusive, - = open)\n");
    for (k, &n) in hist.iter().enumerate().filter(|(_, &n)| n > 0) {
        let (lo, hi) = bucket_range(k);
        let hi = hi.map_or("-".to_owned(), |h| h.to_string());
        let _ = writeln!(text, "{lo} {hi} {n}");
    }
    let binned: u64 = hist.iter().sum();
    anyhow::ensure!(
        !hist_kept || binned == total,
        "aggregate map is inconsistent (histogram {binned} vs counter {total}): a BPF program bug, please report it"
    );
    std::fs::write(path, text)
        .with_context(|| format!("cannot write {} (check --out-dir)", path.display()))?;
    Ok(total)
}

/// A tracepoint script's counts, per point index (`script_hits`, summed over CPUs).
pub fn script_hits(skel: &skel::RtraceSkel<'_>, points: usize) -> Result<Vec<u64>> {
    (0..points as u32)
        .map(|i| sum_percpu(&skel.maps.script_hits, &i.to_ne_bytes()))
        .collect()
}

/// Writes a script's counts to `path`: `category:name count` per point, in the script's order.
pub fn write_script_hits(hook: &rtrace_tracer::Hook, counts: &[u64], path: &Path) -> Result<()> {
    use std::fmt::Write as _;
    let rtrace_tracer::Hook::Tracepoints(script) = hook else {
        return Ok(());
    };
    let mut text = format!(
        "# hits per tracepoint of `{}`: tracepoint count\n",
        script.label()
    );
    for (probe, n) in crate::plan::by_probe(&script.points, counts) {
        let _ = writeln!(text, "{probe} {n}");
    }
    std::fs::write(path, text)
        .with_context(|| format!("cannot write {} (check --out-dir)", path.display()))
}

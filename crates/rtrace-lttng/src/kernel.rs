//! A kernel channel beside a UST session (`npt --lttng-kernel`): what the kernel did on a CPU
//! while a loop in user space stood still. The session writes the channel's statistics next to
//! its kernel trace (`<session>/kernel/`); [`channel`] counts the trace's events by name and
//! [`during`] reads what happened on one CPU in given windows of `CLOCK_MONOTONIC`, from
//! babeltrace2's text with `--clock-cycles` (LTTng's kernel clock is `monotonic`: raw
//! `CLOCK_MONOTONIC` ns, as the UST clock).

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the kernel channel beside the UST channel.
pub const CHANNEL: &str = "rtrace_kernel";
/// The file the session writes beside its kernel trace: `discarded_events lost_packets`.
pub const STATS_FILE: &str = "kernel-channel-stats";

/// What the kernel channel of a run recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Channel {
    /// Events in the kernel trace, by name.
    pub events: BTreeMap<String, u64>,
    /// The kernel channel's discarded events (`lttng list`), not the UST channel's.
    pub discarded: u64,
    /// Its lost packets.
    pub lost_packets: u64,
}

/// One kernel event as babeltrace2 prints it with `--clock-cycles`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The clock's raw value (`CLOCK_MONOTONIC` ns).
    pub cycles: u64,
    pub name: String,
    pub cpu: Option<u32>,
    /// The payload as printed (`{ prev_comm = "x", ... }`).
    pub fields: String,
}

/// Kernel tracing names its events as tracepoints do: checked before they reach `lttng`.
pub fn validate_events(events: &[String]) -> Result<()> {
    if events.is_empty() {
        bail!("no LTTng kernel event given: name some, e.g. sched_switch,irq_handler_entry");
    }
    for e in events {
        rtrace_tracer::validate_name("LTTng kernel event", e)?;
    }
    Ok(())
}

/// The kernel trace of a session written below `dir` (any depth): the directory holding
/// [`STATS_FILE`]. `None`: the run had no kernel channel.
pub fn find(dir: &Path) -> Option<PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join(STATS_FILE).is_file() {
            return Some(d);
        }
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    None
}

/// Writes the kernel channel's statistics into `session_out`.
pub(crate) fn write_stats(session_out: &Path, discarded: u64, lost_packets: u64) -> Result<()> {
    std::fs::create_dir_all(session_out)?;
    let file = session_out.join(STATS_FILE);
    std::fs::write(&file, format!("{discarded} {lost_packets}\n"))
        .with_context(|| format!("cannot write {}", file.display()))
}

/// What the kernel channel of the session whose output is `session_out` recorded.
pub fn channel(session_out: &Path) -> Result<Channel> {
    let file = session_out.join(STATS_FILE);
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut nums = text.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(discarded)), Some(Ok(lost_packets))) = (nums.next(), nums.next()) else {
        bail!("{}: unreadable ({text:?})", file.display());
    };
    let mut events = BTreeMap::new();
    each_event(&session_out.join("kernel"), |e| {
        *events.entry(e.name).or_insert(0) += 1;
    })?;
    Ok(Channel {
        events,
        discarded,
        lost_packets,
    })
}

/// Kernel events on CPU `cpu` in each window `[from, to]` (`CLOCK_MONOTONIC` ns), in trace
/// order: one pass over the trace.
pub fn during(session_out: &Path, cpu: u32, windows: &[(u64, u64)]) -> Result<Vec<Vec<Event>>> {
    let mut out = vec![Vec::new(); windows.len()];
    each_event(&session_out.join("kernel"), |e| {
        if e.cpu != Some(cpu) {
            return;
        }
        for (i, &(from, to)) in windows.iter().enumerate() {
            if (from..=to).contains(&e.cycles) {
                out[i].push(e.clone());
            }
        }
    })?;
    Ok(out)
}

/// Every event of the trace in `trace` (babeltrace2, streamed); nothing if it does not exist.
fn each_event(trace: &Path, mut f: impl FnMut(Event)) -> Result<()> {
    crate::ctf::each_line(trace, &["--clock-cycles"], |line| match parse_line(line) {
        Some(e) => {
            f(e);
            Ok(())
        }
        None => bail!("babeltrace2 printed an unexpected line: {line}"),
    })
}

/// One line of `babeltrace2 --clock-cycles`:
/// `[00000021775420770092] (+000000001312) host sched_switch: { cpu_id = 1 }, { prev_comm = … }`.
pub fn parse_line(line: &str) -> Option<Event> {
    let rest = line.strip_prefix('[')?;
    let (cycles, rest) = rest.split_once(']')?;
    let cycles = cycles
        .trim()
        .trim_end_matches("cycles")
        .trim()
        .parse()
        .ok()?;
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix("(+") {
        Some(r) => r.split_once(')')?.1,
        None => rest,
    };
    // `host name: {…}`: the name is the last word before the first `: `.
    let (head, body) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let name = head.split_whitespace().last()?.to_owned();
    let cpu = field(body, "cpu_id").and_then(|v| v.parse().ok());
    Some(Event {
        cycles,
        name,
        cpu,
        fields: body.to_owned(),
    })
}

/// The value of field `name` in a printed payload, unquoted (`next_comm = "kworker/1:2"`).
pub fn field<'a>(fields: &'a str, name: &str) -> Option<&'a str> {
    let needle = format!("{name} = ");
    let mut from = 0;
    // A whole field name: preceded by `{ ` or `, `.
    let at = loop {
        let i = from + fields[from..].find(&needle)?;
        if i == 0 || fields[..i].ends_with(' ') {
            break i;
        }
        from = i + needle.len();
    };
    let v = &fields[at + needle.len()..];
    if let Some(q) = v.strip_prefix('"') {
        return q.split_once('"').map(|(s, _)| s);
    }
    let end = v.find([',', ' ', '}']).unwrap_or(v.len());
    Some(&v[..end])
}

/// Kernel symbols by address from `/proc/kallsyms` (`hrtimer tick_sched_timer`, not its
/// address); empty where they are hidden (all addresses 0) or unreadable.
pub fn kallsyms() -> Symbols {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    parse_kallsyms(&text)
}

/// Kernel functions by start address.
pub type Symbols = std::collections::HashMap<u64, String>;

/// `ffffffff8112c0e0 t tick_sched_timer` lines; text symbols only, address 0 left out.
pub fn parse_kallsyms(text: &str) -> Symbols {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let addr = u64::from_str_radix(w.next()?, 16)
                .ok()
                .filter(|&a| a != 0)?;
            let kind = w.next()?;
            matches!(kind, "t" | "T").then_some(())?;
            Some((addr, w.next()?.to_owned()))
        })
        .collect()
}

/// One event in a few words: what took the CPU (`sched_switch to kworker/1:2 (tid 55)`,
/// `irq 11 virtio0`, `softirq 7`, `hrtimer tick_sched_timer`: its function by `syms`, else its
/// address); `None` for the exits, which add nothing to their entries. LTTng's kernel events
/// are named as the kernel's tracepoints (`sched_switch`, `irq_handler_entry`) or with their
/// system in front (`irq_softirq_entry`, `timer_hrtimer_expire_entry`).
pub fn describe(e: &Event, syms: &Symbols) -> Option<String> {
    let f = |n| field(&e.fields, n);
    Some(match e.name.as_str() {
        "sched_switch" => format!(
            "sched_switch to {} (tid {})",
            f("next_comm").unwrap_or("?"),
            f("next_tid").unwrap_or("?")
        ),
        "irq_handler_entry" => match f("name") {
            Some(n) => format!("irq {} {n}", f("irq").unwrap_or("?")),
            None => format!("irq {}", f("irq").unwrap_or("?")),
        },
        "softirq_entry" | "irq_softirq_entry" => format!("softirq {}", f("vec").unwrap_or("?")),
        "hrtimer_expire_entry" | "timer_hrtimer_expire_entry" => {
            let function = f("function").unwrap_or("?");
            let addr = function.strip_prefix("0x").or(function.strip_prefix("0X"));
            let name = addr
                .and_then(|a| u64::from_str_radix(a, 16).ok())
                .and_then(|a| syms.get(&a));
            format!("hrtimer {}", name.map_or(function, String::as_str))
        }
        n if n.ends_with("_exit") || n.ends_with("_exit_entry") => return None,
        n => n.to_owned(),
    })
}

/// The events of one window in a line: each description once, in order, with how many times
/// it occurred (`sched_switch to kworker/1:2 (tid 55) ×2, irq 11 virtio0`), at most `max`.
pub fn summarize(events: &[Event], max: usize, syms: &Symbols) -> String {
    let mut seen: Vec<(String, u64)> = Vec::new();
    for d in events.iter().filter_map(|e| describe(e, syms)) {
        match seen.iter_mut().find(|(s, _)| *s == d) {
            Some((_, n)) => *n += 1,
            None => seen.push((d, 1)),
        }
    }
    if seen.is_empty() {
        return "nothing".to_owned();
    }
    let more = seen.len().saturating_sub(max);
    let mut parts: Vec<String> = seen
        .into_iter()
        .take(max)
        .map(|(d, n)| if n > 1 { format!("{d} ×{n}") } else { d })
        .collect();
    if more > 0 {
        parts.push(format!("{more} more"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = r#"[00000021775420770092] (+????????????) vm sched_switch: { cpu_id = 1 }, { prev_comm = "workload-lttng", prev_tid = 812, prev_prio = -99, prev_state = 0, next_comm = "kworker/1:2", next_tid = 55, next_prio = 20 }"#;

    #[test]
    fn parses_babeltrace2_clock_cycles_lines() {
        let no = Symbols::new();
        let e = parse_line(SWITCH).unwrap();
        assert_eq!(e.cycles, 21_775_420_770_092);
        assert_eq!(e.name, "sched_switch");
        assert_eq!(e.cpu, Some(1));
        assert_eq!(field(&e.fields, "next_comm"), Some("kworker/1:2"));
        assert_eq!(field(&e.fields, "prev_tid"), Some("812"));
        // `tid` must not match inside `prev_tid`.
        assert_eq!(field(&e.fields, "tid"), None);
        assert_eq!(
            describe(&e, &no).as_deref(),
            Some("sched_switch to kworker/1:2 (tid 55)")
        );
        let irq = "[00000000000000001000] (+000000000312) vm irq_handler_entry: { cpu_id = 0 }, { irq = 11, name = \"virtio0\" }";
        let irq = parse_line(irq).unwrap();
        assert_eq!((irq.cycles, irq.cpu), (1000, Some(0)));
        assert_eq!(describe(&irq, &no).as_deref(), Some("irq 11 virtio0"));
        let soft = parse_line(
            "[00000000000000002000] (+000000001000) vm softirq_entry: { cpu_id = 1 }, { vec = 7 }",
        )
        .unwrap();
        assert_eq!(describe(&soft, &no).as_deref(), Some("softirq 7"));
        let exit = parse_line("[00000000000000003000] (+000000001000) vm irq_handler_exit: { cpu_id = 1 }, { irq = 11, ret = 1 }").unwrap();
        assert_eq!(describe(&exit, &no), None);
        let timer = parse_line("[00000000000000004000] (+000000001000) vm timer_hrtimer_expire_entry: { cpu_id = 1 }, { hrtimer = 0xFFFF9A, now = 4000, function = 0xFFFFFFFF8112C0E0 }").unwrap();
        assert_eq!(
            describe(&timer, &no).as_deref(),
            Some("hrtimer 0xFFFFFFFF8112C0E0")
        );
        let syms = parse_kallsyms("ffffffff8112c0e0 t tick_sched_timer\nffffffff81000000 D some_data\n0000000000000000 T hidden\n");
        assert_eq!(syms.len(), 1);
        assert_eq!(
            describe(&timer, &syms).as_deref(),
            Some("hrtimer tick_sched_timer")
        );
        let lttng_soft = parse_line("[00000000000000002000] (+000000001000) vm irq_softirq_entry: { cpu_id = 1 }, { vec = 1 }").unwrap();
        assert_eq!(describe(&lttng_soft, &no).as_deref(), Some("softirq 1"));
        // No hostname in the trace's environment.
        let bare = parse_line(
            "[00000000000000000005] (+?) sched_wakeup: { cpu_id = 1 }, { comm = \"a\" }",
        )
        .unwrap();
        assert_eq!((bare.name.as_str(), bare.cycles), ("sched_wakeup", 5));
        for bad in ["", "babeltrace2: error", "[x] (+1) vm e: { }", "[12] (+1"] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }

    #[test]
    fn summarizes_a_window_once_per_cause() {
        let events: Vec<Event> = [SWITCH, SWITCH]
            .iter()
            .chain(&["[00000000000000001000] (+000000000312) vm irq_handler_entry: { cpu_id = 1 }, { irq = 11, name = \"virtio0\" }",
                "[00000000000000001100] (+000000000312) vm irq_handler_exit: { cpu_id = 1 }, { irq = 11, ret = 1 }"])
            .map(|l| parse_line(l).unwrap())
            .collect();
        assert_eq!(
            summarize(&events, 4, &Symbols::new()),
            "sched_switch to kworker/1:2 (tid 55) ×2, irq 11 virtio0"
        );
        assert_eq!(
            summarize(&events, 1, &Symbols::new()),
            "sched_switch to kworker/1:2 (tid 55) ×2, 1 more"
        );
        assert_eq!(summarize(&[], 4, &Symbols::new()), "nothing");
    }

    #[test]
    fn refuses_no_events_and_odd_names() {
        assert!(validate_events(&[]).is_err());
        assert!(validate_events(&["sched_switch;rm".into()]).is_err());
        assert!(validate_events(&["sched_switch".into(), "irq_handler_entry".into()]).is_ok());
    }
}

//! `rtrace-bench events` end to end: Gregg's experiments with bpftrace's one-liners, our eBPF
//! programs and ftrace, every output checked against the workload's own count of reads, the
//! accounting runs exact, what cannot run here listed with why, the buffer each tracer's
//! backend made recorded, nothing left behind.

use rtrace_tests::*;

#[test]
fn experiments_run_with_exact_accounting_and_leave_nothing() {
    let before = tracefs_snapshot();
    let bpf_before = bpf_ids("link");
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "events",
        "--tracer",
        "bpftrace,ebpf,ftrace",
        "--workload",
        "loop",
        "--experiments",
        "1-6,10,15,18",
        "--reads",
        "20000",
        "--rounds",
        "2",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    assert_eq!(bpf_ids("link"), bpf_before, "BPF links left behind");
    keep_result(&dir.path().join("events.json"));
    let v = read_json(&dir.path().join("events.json"));
    assert_eq!(v["baseline"].as_array().unwrap().len(), 4, "two per round");
    assert_buffers(&v, &["bpftrace", "ebpf", "ftrace"]);
    let cell = |n: u64, t: &str| {
        v["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tracer"] == t && feature_number(&c["feature"]) == n)
            .unwrap_or_else(|| panic!("no cell {n} {t}"))
            .clone()
    };
    // Measured where this machine has the mechanism, for both BPF tracers.
    for t in ["bpftrace", "ebpf"] {
        for n in [1, 4, 5, 6, 10, 15, 18] {
            let c = cell(n, t);
            let runs = c["outcome"]["detail"]
                .as_array()
                .unwrap_or_else(|| panic!("{c}"));
            assert_eq!(c["outcome"]["kind"], "measured", "{c}");
            assert_eq!(runs.len(), 2, "{c}");
            for r in runs {
                assert_eq!(r["reads"].as_u64(), Some(20_000), "{c}");
            }
        }
        // @[pid] = count(): exactly the workload's reads in every round.
        for r in cell(10, t)["outcome"]["detail"].as_array().unwrap() {
            assert_eq!(r["evidence"]["workload"].as_u64(), Some(20_000), "{r}");
        }
        // Per-event output: at least one line per read.
        for r in cell(18, t)["outcome"]["detail"].as_array().unwrap() {
            let all = r["evidence"]["all"].as_u64().unwrap();
            let lost = r["evidence"]["lost"].as_u64().unwrap();
            assert!(all + lost >= 20_000, "{r}");
        }
        // No kprobes on this host: listed, not skipped.
        assert_eq!(
            cell(2, t)["outcome"]["kind"],
            "unavailable",
            "{}",
            cell(2, t)
        );
    }
    assert_eq!(cell(4, "ftrace")["outcome"]["kind"], "measured");
    assert_eq!(cell(18, "ftrace")["outcome"]["kind"], "inexpressible");
    // Every (tracer, hook) the cells use was accounted exactly against the workload's reads.
    let checks = v["hook_checks"].as_array().unwrap();
    assert_eq!(
        checks.len(),
        3 * 3,
        "enter, exit, uprobe for 3 tracers: {checks:?}"
    );
    for c in checks {
        assert_eq!(
            c["recorded"].as_u64().unwrap() + c["lost"].as_u64().unwrap(),
            c["reads"].as_u64().unwrap(),
            "{c}"
        );
        assert!(c["recorded"].as_u64().unwrap() > 0, "{c}");
    }
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("Piotrowski's Table IV"), "{report}");
    assert!(report.contains("ebpf ÷ bpftrace"), "{report}");
    assert!(dir.path().join("figures/events-costs.svg").is_file());
}

#[test]
fn dd_as_gregg_ran_it_with_its_start_up_reads_measured() {
    let before = tracefs_snapshot();
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "events",
        "--tracer",
        "bpftrace,ebpf",
        "--workload",
        "dd",
        "--experiments",
        "4,10",
        "--reads",
        "20000",
        "--rounds",
        "1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_ok(&out);
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
    let v = read_json(&dir.path().join("events.json"));
    assert_buffers(&v, &["bpftrace", "ebpf"]);
    let checks = v["hook_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "enter for 2 tracers: {checks:?}");
    for c in checks {
        assert_eq!(c["workload"], "dd", "{c}");
        assert_eq!(c["reads"].as_u64(), Some(20_000), "{c}");
        // The dynamic loader reads dd's libraries: measured on a run copying nothing.
        let startup = c["startup"].as_u64().unwrap();
        assert!(startup < 100, "{c}");
        assert_eq!(
            c["recorded"].as_u64().unwrap() + c["lost"].as_u64().unwrap(),
            20_000 + startup,
            "{c}"
        );
    }
    let startup = checks[0]["startup"].as_u64().unwrap();
    for c in v["cells"].as_array().unwrap() {
        assert_eq!(c["workload"], "dd", "{c}");
        if feature_number(&c["feature"]) == 10 {
            for r in c["outcome"]["detail"].as_array().unwrap() {
                // @[pid]: dd's blocks plus its start-up reads, exactly.
                assert_eq!(
                    r["evidence"]["workload"].as_u64(),
                    Some(20_000 + startup),
                    "{r}"
                );
                assert_eq!(r["reads"].as_u64(), Some(20_000), "{r}");
            }
        }
    }
    assert!(dir.path().join("figures/events-costs-dd.svg").is_file());
}

/// Every tracer used has its backend's description of the buffer it made of the default size
/// (4096 KiB per CPU, as every experiment's), and no other.
fn assert_buffers(v: &serde_json::Value, tracers: &[&str]) {
    let config = &v["config"];
    assert_eq!(config["buffer_size_kb"], 4096, "{config}");
    let buffers = config["buffers"]
        .as_object()
        .unwrap_or_else(|| panic!("{config}"));
    let mut names: Vec<&str> = buffers.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, tracers, "{config}");
    for (tracer, text) in buffers {
        assert!(
            text.as_str().unwrap().contains("4096 KiB per CPU"),
            "{tracer}: {text}"
        );
    }
}

fn feature_number(f: &serde_json::Value) -> u64 {
    let names = [
        "control",
        "kprobe",
        "kretprobe",
        "tracepoint-entry",
        "tracepoint-return",
        "uprobe",
        "uretprobe",
        "filter",
        "map",
        "single-key",
        "string-key",
        "two-keys",
        "kernel-stack",
        "user-stack",
        "histogram",
        "timing",
        "multiple",
        "per-event",
    ];
    names
        .iter()
        .position(|n| f == n)
        .map_or(0, |i| i as u64 + 1)
}

/// Each backend gives the events suite's programs (`Hook::Read`) the buffer the target asks
/// for: ftrace's instance (an event of its own, and a libc uprobe through the ordinary path),
/// eBPF's `ev_lines` ring (experiment 18), bpftrace's perf buffer; LTTng's kernel tracer says
/// why not when its modules are absent.
#[test]
fn read_programs_get_the_buffer_size_they_ask_for() {
    use rtrace_tracer::features::{Feature, Read, ReadProgram, Unsupported};
    use rtrace_tracer::{Hook, RecordMode, Target, Tracer};
    let before = tracefs_snapshot();
    let libc = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.is_file())
    .expect("Debian's libc");
    let read_offset = rtrace_sdt::function(&libc, "read").unwrap().offset;
    let dir = tempfile::tempdir().unwrap();
    let target = |feature| Target {
        hook: Hook::Read(Read {
            program: ReadProgram::Feature(feature),
            libc: libc.clone(),
            read_offset,
            kprobes: false,
        }),
        pid: None,
        follow_children: false,
        tree: false,
        skip_tid: None,
        out_dir: dir.path().to_owned(),
        consumer_cpus: vec![0],
        buffer_size_kb: Some(64),
        record: RecordMode::Overwrite,
        poll: None,
    };
    // The kernel rounds a size up to whole sub-buffer pages (64 reads back as 67 here).
    let instance_kb = || {
        let names = our_instances();
        assert_eq!(names.len(), 1, "{names:?}");
        let f = format!("/sys/kernel/tracing/instances/{}/buffer_size_kb", names[0]);
        let text = std::fs::read_to_string(f).unwrap();
        text.trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{text}"))
    };
    let ftrace = rtrace_ftrace::FtraceTracer::new();
    for feature in [Feature::TracepointEntry, Feature::Uprobe] {
        let a = ftrace.attach(&target(feature)).unwrap();
        let kb = instance_kb();
        assert!((64..80).contains(&kb), "{feature}: {kb} KiB");
        a.evidence(1, "none").unwrap();
    }

    let ebpf = rtrace_ebpf::EbpfTracer::new(rtrace_ebpf::EbpfMode::Aggregate);
    let a = ebpf.attach(&target(Feature::PerEvent)).unwrap();
    let maps = std::process::Command::new("bpftool")
        .args(["-j", "map", "show"])
        .output()
        .unwrap();
    let maps: serde_json::Value = serde_json::from_slice(&maps.stdout).unwrap();
    let ring = maps
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == "ev_lines")
        .map(|m| m["max_entries"].as_u64().unwrap())
        .collect::<Vec<_>>();
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    let ncpus = cpus
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1,
            None => 1,
        })
        .sum::<u64>();
    assert_eq!(ring, [(64 * 1024 * ncpus).next_power_of_two()], "{maps}");
    a.evidence(1, "none").unwrap();

    let bpftrace = rtrace_bpftrace::BpftraceTracer::new(rtrace_bpftrace::BpftraceMode::Aggregate);
    let before_pids = pids_named(&["bpftrace"]);
    let a = bpftrace.attach(&target(Feature::Map)).unwrap();
    let pids: Vec<u32> = pids_named(&["bpftrace"])
        .difference(&before_pids)
        .copied()
        .collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let env = std::fs::read(format!("/proc/{}/environ", pids[0])).unwrap();
    assert!(
        env.split(|b| *b == 0)
            .any(|v| v == b"BPFTRACE_PERF_RB_PAGES=16"),
        "{}",
        String::from_utf8_lossy(&env)
    );
    let ev = a.evidence(1, "none").unwrap();
    assert!(ev.all.unwrap() > 0, "{ev:?}");

    let lttng = rtrace_lttng::LttngTracer::new(rtrace_lttng::LttngOptions::default()).unwrap();
    if let Err(e) = lttng.check(&target(Feature::TracepointEntry).hook) {
        assert!(
            matches!(
                e.downcast_ref::<Unsupported>(),
                Some(Unsupported::Unavailable(_))
            ),
            "{e:#}"
        );
    }
    assert_eq!(tracefs_snapshot(), before, "tracing state left behind");
}

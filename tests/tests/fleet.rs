//! Root integration test of the fleet playbook (`deploy/fleet.yml`): Ansible (Debian's
//! `ansible-core`) runs it against this machine as two machines, two inventory entries with the
//! local connection labelled `lab-a` and `lab-b` (a QEMU guest would need a Debian root file
//! system with Python and SSH under TCG: minutes before the first task). Each label's result
//! lands in its own folder with its label in the environment, the fleet report names both, the
//! runs of the two labels did not overlap, and the machine is left as it was.

use rtrace_tests::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The cheapest usdt run that still gives each machine a per-hit cost with an interval: one
/// tracer, case 1 against case 0, 2 rounds of few iterations.
const EXPERIMENT: &str = "usdt --tracer ftrace --case 0,1 -n 10000 --warmup 1000 --rounds 2";
const LABELS: [&str; 2] = ["lab-a", "lab-b"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds tests/")
        .to_owned()
}

/// `path` as JSON, the file named in the panic.
fn json(path: &Path) -> serde_json::Value {
    assert!(path.exists(), "{} missing", path.display());
    read_json(path)
}

/// When a run started and ended, from its result: `started_unix` and the file's modification.
fn span(result: &Path) -> (u64, u64) {
    let started = json(result)["started_unix"].as_u64().expect("started_unix");
    let ended = std::fs::metadata(result)
        .and_then(|m| m.modified())
        .expect("mtime")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs();
    (started, ended)
}

#[test]
fn playbook_runs_two_machines_here_and_reports_both() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fleet = dir.join("fleet");
    let remote = dir.join("remote");
    let build = bin("rtrace-bench").parent().unwrap().to_owned();
    // Host names differ from the labels: the report must use rtrace_label. As root, su is a
    // become method that needs neither a password nor sudo.
    let inventory = dir.join("inventory.ini");
    std::fs::write(
        &inventory,
        format!(
            "[fleet]\nhost-a rtrace_label={}\nhost-b rtrace_label={}\n\n[fleet:vars]\n\
             ansible_connection=local\nansible_python_interpreter=/usr/bin/python3\n\
             ansible_become_method=su\n",
            LABELS[0], LABELS[1]
        ),
    )
    .unwrap();
    let vars = serde_json::json!({
        "rtrace_build_dir": build,
        "rtrace_fleet_dir": fleet,
        "rtrace_remote_dir": remote,
        "rtrace_lock_file": dir.join("run.lock"),
        "rtrace_experiments": [EXPERIMENT],
    });
    let before = MachineState::now();
    let start = std::time::Instant::now();
    let out = Command::new("ansible-playbook")
        .arg("-i")
        .arg(&inventory)
        .arg(repo().join("deploy/fleet.yml"))
        .arg("-e")
        .arg(vars.to_string())
        .current_dir(dir)
        // Ansible's own files (temporary modules, SSH control sockets) in the test's folder.
        .env("ANSIBLE_HOME", dir.join("ansible-home"))
        .env("ANSIBLE_REMOTE_TEMP", dir.join("ansible-remote"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .expect(
            "ansible-playbook (apt-get install --no-install-recommends ansible-core; \
             cargo xtask ci installs it)",
        );
    eprintln!("ansible-playbook took {:.1?}", start.elapsed());
    let log = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "ansible-playbook failed: {}\n{log}",
        out.status
    );

    // Each label's result in its own folder, named by its label.
    let mut spans = Vec::new();
    let mut cpus = Vec::new();
    for label in LABELS {
        let result = fleet.join(label).join("usdt/usdt.json");
        let v = json(&result);
        assert_eq!(v["experiment"], "usdt", "{}", result.display());
        assert_eq!(v["environment"]["label"], label, "{}", result.display());
        spans.push(span(&result));
        cpus.push(v["config"]["cpu"].clone());
    }
    // The two labels' runs took turns on this machine: a run beside another would have moved
    // to a CPU the other does not measure on (or been refused), and their times would overlap
    // (whole seconds: they may touch).
    assert_eq!(cpus[0], cpus[1], "measured CPUs of {LABELS:?}");
    let (a, b) = (spans[0], spans[1]);
    assert!(
        a.1 <= b.0 || b.1 <= a.0,
        "the runs of {LABELS:?} overlapped: {spans:?}"
    );

    // The fleet report: a machine per label, each with ftrace's per-hit cost over 2 rounds.
    let report = fleet.join("report");
    let v = json(&report.join("fleet.json"));
    let mut names: Vec<&str> = v["machines"]
        .as_array()
        .expect("machines")
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    names.sort();
    assert_eq!(names, LABELS, "fleet.json's machines");
    for label in LABELS {
        let cost = v["costs"]
            .as_array()
            .expect("costs")
            .iter()
            .find(|c| c["machine"] == label && c["experiment"] == "usdt" && c["tracer"] == "ftrace")
            .unwrap_or_else(|| panic!("no ftrace usdt cost of {label} in fleet.json: {v:#}"));
        let ns = &cost["ns"];
        assert_eq!(ns["rounds"], 2, "{cost:#}");
        let (low, high) = (ns["low"].as_f64(), ns["high"].as_f64());
        assert!(
            low.zip(high).is_some_and(|(l, h)| l <= h),
            "an interval: {cost:#}"
        );
    }
    let text = std::fs::read_to_string(report.join("report.txt")).expect("report.txt");
    assert!(
        text.lines().any(|l| l.starts_with("fleet")),
        "report.txt has no fleet section:\n{text}"
    );

    // Clean: the remote scratch folder emptied, no local archive left, nothing of a tracer.
    let scratch: Vec<_> = std::fs::read_dir(remote.join("results"))
        .expect("the remote results folder")
        .collect();
    assert!(scratch.is_empty(), "left on the machine: {scratch:?}");
    let mut top: Vec<String> = std::fs::read_dir(&fleet)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["lab-a", "lab-b", "report"], "the fleet folder");
    if let Err(diff) = before.returns(10) {
        panic!("the playbook changed the machine: {diff}\n{log}");
    }
}

//! `rtrace-bench compare A.json B.json`: overlays two cyclictest-sweep results (e.g. PREEMPT vs
//! PREEMPT_RT, thesis Fig 3.5) as per-percentile differences B − A with ratios B / A of means
//! and medians (bootstrap interval); or two usdt results as ratios B / A of every case-1 run's
//! extra ns per hit (interval over the rounds of both).

use anyhow::{bail, Result};
use rtrace_measure::sweep::SweepResult;
use rtrace_measure::usdt::UsdtResult;
use rtrace_report::ratios::{self, RatioRow};
use std::path::Path;

/// Compares result file `b_file` with `a_file`; `json`: where the comparison goes too.
pub fn run(a_file: &Path, b_file: &Path, json: Option<&Path>) -> Result<i32> {
    if let Some(j) = json {
        crate::output::check_file("--json", j)?;
    }
    let (a, b) = (crate::report::load(a_file)?, crate::report::load(b_file)?);
    let sweeps_of = (a.get::<SweepResult>(), b.get::<SweepResult>());
    let usdt_of = (a.get::<UsdtResult>(), b.get::<UsdtResult>());
    let (value, rows) = match (sweeps_of, usdt_of) {
        ((Some(a), Some(b)), _) => sweeps(a_file, a, b_file, b)?,
        (_, (Some(a), Some(b))) => {
            println!(
                "compare: extra ns per hit of case 1, B / A\n  A: {} — kernel {} ({}), {} iterations\n  B: {} — kernel {} ({}), {} iterations\n",
                a_file.display(), a.header.environment.kernel_release, a.header.environment.preemption, a.config.iterations,
                b_file.display(), b.header.environment.kernel_release, b.header.environment.preemption, b.config.iterations,
            );
            println!("{}", ratios::usdt_method(a));
            println!("interval over the rounds of both results: Welch's t on the log of each round's cost\n");
            let rows = ratios::usdt_pairs(a, b);
            (serde_json::json!({ "a": a_file, "b": b_file }), rows)
        }
        _ => bail!(
            "{} is a `{}` result and {} a `{}` result: compare takes two results of the same experiment",
            a_file.display(),
            a.experiment(),
            b_file.display(),
            b.experiment()
        ),
    };
    print_ratios(&rows);
    if let Some(j) = json {
        let mut value = value;
        value["ratios"] = serde_json::to_value(&rows)?;
        let mut bytes = serde_json::to_vec_pretty(&value)?;
        bytes.push(b'\n');
        crate::output::write_atomic(j, &bytes)?;
    }
    Ok(0)
}

/// The sweep comparison (per-percentile differences) and its ratio rows.
fn sweeps(
    a_file: &Path,
    a: &SweepResult,
    b_file: &Path,
    b: &SweepResult,
) -> Result<(serde_json::Value, Vec<RatioRow>)> {
    let c = rtrace_measure::compare::compare(
        &a_file.display().to_string(),
        a,
        &b_file.display().to_string(),
        b,
    );
    print!("{}", rtrace_report::compare::sweeps(&c));
    println!();
    println!("ratios B / A with bootstrap confidence intervals (resampled histograms)");
    Ok((serde_json::to_value(&c)?, ratios::sweep_pairs(a, b)?))
}

fn print_ratios(rows: &[RatioRow]) {
    if rows.is_empty() {
        println!("no run was measured in both files: nothing to compare");
        return;
    }
    print!("{}", ratios::table(rows));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrace_report::AnyResult;
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, r: &AnyResult) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, r.to_json().unwrap()).unwrap();
        path
    }

    #[test]
    fn same_experiments_compare_and_mixed_ones_are_rejected_with_the_fix() {
        use rtrace_report::fixtures;
        let dir = tempfile::tempdir().unwrap();
        let usdt = write(dir.path(), "usdt.json", &AnyResult::from(fixtures::usdt()));
        let sweep = write(
            dir.path(),
            "s.json",
            &AnyResult::from(fixtures::sweep("PREEMPT", 1)),
        );
        let json = dir.path().join("c.json");
        let compare = |a: &Path, b: &Path| run(a, b, Some(&json));
        assert_eq!(compare(&usdt, &usdt).unwrap(), 0);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(v["ratios"][0]["mean"]["low"].as_f64().unwrap() < 1.0, "{v}");
        assert_eq!(v["ratios"][0]["numerator"], "B lttng case 1", "{v}");
        assert_eq!(compare(&sweep, &sweep).unwrap(), 0);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(v["pairs"].is_array() && v["ratios"].is_array(), "{v}");
        let e = format!("{:#}", compare(&usdt, &sweep).unwrap_err());
        assert!(
            e.contains("compare takes two results of the same experiment"),
            "{e}"
        );
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "not json").unwrap();
        assert!(format!("{:#}", compare(&junk, &usdt).unwrap_err()).contains("not JSON"));
    }
}

//! `rtrace-bench compare A.json B.json`: overlays two cyclictest-sweep results (e.g. PREEMPT vs
//! PREEMPT_RT, thesis Fig 3.5) as per-percentile differences B − A with ratios B / A of means
//! and medians (bootstrap interval); or two usdt results as ratios B / A of every case-1 run's
//! extra ns per hit (interval over the rounds of both).

use anyhow::{bail, Result};
use clap::Args;
use rtrace_measure::sweep::SweepResult;
use rtrace_report::ratios::{self, RatioRow};
use rtrace_report::AnyResult;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference result (`cyclictest-sweep.json` or `usdt.json`).
    pub a: PathBuf,
    /// The result compared against A (same experiment).
    pub b: PathBuf,
    /// Write the comparison as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub fn run(args: &CompareArgs) -> Result<i32> {
    if let Some(j) = &args.json {
        crate::output::check_file("--json", j)?;
    }
    let (a, b) = (crate::report::load(&args.a)?, crate::report::load(&args.b)?);
    let (json, rows) = match (&a, &b) {
        (AnyResult::Sweep(a), AnyResult::Sweep(b)) => sweeps(args, a, b)?,
        (AnyResult::Usdt(a), AnyResult::Usdt(b)) => {
            println!(
                "compare: extra ns per hit of case 1, B / A\n  A: {} — kernel {} ({}), {} iterations\n  B: {} — kernel {} ({}), {} iterations\n",
                args.a.display(), a.environment.kernel_release, a.environment.preemption, a.config.iterations,
                args.b.display(), b.environment.kernel_release, b.environment.preemption, b.config.iterations,
            );
            println!("{}", ratios::usdt_method(a));
            println!("interval over the rounds of both results: Welch's t on the log of each round's cost\n");
            let rows = ratios::usdt_pairs(a, b);
            (serde_json::json!({ "a": args.a, "b": args.b }), rows)
        }
        _ => bail!(
            "{} is a `{}` result and {} a `{}` result: compare takes two results of the same experiment",
            args.a.display(),
            a.experiment(),
            args.b.display(),
            b.experiment()
        ),
    };
    print_ratios(&rows);
    if let Some(j) = &args.json {
        let mut json = json;
        json["ratios"] = serde_json::to_value(&rows)?;
        let mut bytes = serde_json::to_vec_pretty(&json)?;
        bytes.push(b'\n');
        crate::output::write_atomic(j, &bytes)?;
    }
    Ok(0)
}

/// The sweep comparison (per-percentile differences) and its ratio rows.
fn sweeps(
    args: &CompareArgs,
    a: &SweepResult,
    b: &SweepResult,
) -> Result<(serde_json::Value, Vec<RatioRow>)> {
    let c = rtrace_measure::compare::compare(
        &args.a.display().to_string(),
        a,
        &args.b.display().to_string(),
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
    use std::path::Path;

    fn write(dir: &Path, name: &str, r: &AnyResult) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, r.to_json().unwrap()).unwrap();
        path
    }

    #[test]
    fn same_experiments_compare_and_mixed_ones_are_rejected_with_the_fix() {
        use rtrace_report::fixtures;
        let dir = tempfile::tempdir().unwrap();
        let usdt = write(dir.path(), "usdt.json", &AnyResult::Usdt(fixtures::usdt()));
        let sweep = write(
            dir.path(),
            "s.json",
            &AnyResult::Sweep(fixtures::sweep("PREEMPT", 1)),
        );
        let json = dir.path().join("c.json");
        let args = |a: &Path, b: &Path| CompareArgs {
            a: a.to_owned(),
            b: b.to_owned(),
            json: Some(json.clone()),
        };
        assert_eq!(run(&args(&usdt, &usdt)).unwrap(), 0);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(v["ratios"][0]["mean"]["low"].as_f64().unwrap() < 1.0, "{v}");
        assert_eq!(v["ratios"][0]["numerator"], "B lttng case 1", "{v}");
        assert_eq!(run(&args(&sweep, &sweep)).unwrap(), 0);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(v["pairs"].is_array() && v["ratios"].is_array(), "{v}");
        let e = format!("{:#}", run(&args(&usdt, &sweep)).unwrap_err());
        assert!(
            e.contains("compare takes two results of the same experiment"),
            "{e}"
        );
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "not json").unwrap();
        assert!(format!("{:#}", run(&args(&junk, &usdt)).unwrap_err()).contains("not JSON"));
    }
}

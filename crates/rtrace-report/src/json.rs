//! JSON exporter: the result model as is (schema: `docs/result-schema.md`).

use anyhow::Result;
use rtrace_measure::usdt::UsdtResult;

pub fn usdt(r: &UsdtResult) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(r)?;
    v.push(b'\n');
    Ok(v)
}

pub fn sweep(r: &rtrace_measure::sweep::SweepResult) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(r)?;
    v.push(b'\n');
    Ok(v)
}

pub fn comparison(c: &rtrace_measure::compare::Comparison) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(c)?;
    v.push(b'\n');
    Ok(v)
}

/// `<id>.json`: every result of a report as a result file, with its warnings.
pub struct Json;

impl crate::export::Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, report: &crate::result::Report) -> Result<Vec<crate::export::Output>> {
        use crate::result::AnyResult;
        report
            .entries
            .iter()
            .map(|e| {
                let bytes = match &e.result {
                    AnyResult::Usdt(r) => usdt(&rtrace_measure::usdt::UsdtResult {
                        warnings: e.warnings.clone(),
                        ..r.clone()
                    })?,
                    AnyResult::Sweep(r) => sweep(&rtrace_measure::sweep::SweepResult {
                        warnings: e.warnings.clone(),
                        ..r.clone()
                    })?,
                    AnyResult::Rate(r) => serde_json::to_vec_pretty(r)?,
                    AnyResult::Npt(r) => serde_json::to_vec_pretty(r)?,
                    AnyResult::Events(r) => serde_json::to_vec_pretty(r)?,
                };
                Ok(crate::export::Output::new(format!("{}.json", e.id), bytes))
            })
            .collect()
    }
}

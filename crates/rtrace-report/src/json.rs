//! JSON exporter: the result model as is (schema: `docs/result-schema.md`).

use anyhow::Result;
use rtrace_measure::usdt::UsdtResult;

pub fn usdt(r: &UsdtResult) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(r)?;
    v.push(b'\n');
    Ok(v)
}

//! Measured costs for `--shard`: the mean worker time per case of each API, read from the
//! summaries an earlier campaign left in its findings folder (`summaries.jsonl`, one line per
//! run, a merged folder holding every shard's).
use std::collections::HashMap;
use std::path::Path;

use super::merge::SUMMARIES;

/// Microseconds per case, by API, over every run of folder `dir` that measured it.
pub fn measured(dir: &Path) -> std::io::Result<HashMap<String, f64>> {
    let text = std::fs::read_to_string(dir.join(SUMMARIES))?;
    let mut sums: HashMap<String, (u64, u64)> = HashMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        for a in v["apis"].as_array().into_iter().flatten() {
            let (Some(api), Some(micros), Some(n)) = (a["api"].as_str(), a["micros"].as_u64(), a["executions"].as_u64()) else { continue };
            let e = sums.entry(api.to_string()).or_insert((0, 0));
            e.0 += micros;
            e.1 += n;
        }
    }
    Ok(sums.into_iter().filter(|(_, (m, n))| *n > 0 && *m > 0).map(|(api, (m, n))| (api, m as f64 / n as f64)).collect())
}

/// The cost of each API: measured where known; the others cost the median of all the measured
/// ones (an unmeasured API is taken for a typical one). Without any measurement, `estimates`.
pub fn blend(names: &[&str], measured: &HashMap<String, f64>, estimates: &[f64]) -> Vec<f64> {
    if !names.iter().any(|n| measured.contains_key(*n)) {
        return estimates.to_vec();
    }
    let mut known: Vec<f64> = measured.values().copied().collect();
    if known.is_empty() {
        return estimates.to_vec();
    }
    known.sort_by(f64::total_cmp);
    let median = known[known.len() / 2];
    names.iter().map(|n| measured.get(*n).copied().unwrap_or(median)).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    #[test]
    fn unmeasured_apis_cost_the_median_and_no_measurement_keeps_the_estimates() {
        let m: HashMap<String, f64> = [("a".to_string(), 10.0), ("b".to_string(), 30.0), ("c".to_string(), 20.0)].into();
        assert_eq!(super::blend(&["a", "x", "b"], &m, &[1.0, 1.0, 1.0]), vec![10.0, 20.0, 30.0]);
        assert_eq!(super::blend(&["x", "y"], &m, &[2.0, 3.0]), vec![2.0, 3.0]);
    }
}

//! Solved jobs kept on disk between runs (`solved-<build>/` in `check::cache_dir`), so that a
//! campaign run again on the same specs starts fuzzing at once instead of solving for minutes
//! (all of specs/ takes about 220 s on two cores). A job's models are a function of the API's
//! spec, the generation settings, the API's index in the run (its seeds mix it in), the job,
//! and the build that solved them: the key holds all of them, and the folder is per build.
//!
//! A cache is an optimisation: an entry that cannot be read or written is a miss, never an
//! error, and a hit is checked against the whole key text, not only its hash.
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{GenConfig, Job, JobResult};
use crate::solve::{Solved, SymModel};
use crate::spec::ApiSpec;

/// Where solved jobs are kept.
#[derive(Clone, Debug)]
pub struct SolveCache {
    dir: PathBuf,
}

/// What a file holds: the key it was solved for, and the models.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    solved: Stored,
}

/// A job's successful result (failures are solved again: a timeout may not recur).
#[derive(Serialize, Deserialize)]
enum Stored {
    Conform(Solved),
    Huge(Vec<SymModel>),
    Violate(usize, Vec<SymModel>),
}

impl SolveCache {
    /// This build's cache under `check::cache_dir`; None where there is no such folder.
    pub fn open() -> Option<SolveCache> {
        let root = crate::check::cache_dir()?;
        Some(SolveCache { dir: root.join(format!("solved-{:016x}", crate::check::build_key())) })
    }

    /// A cache in `dir` (tests).
    pub fn at(dir: PathBuf) -> SolveCache {
        SolveCache { dir }
    }

    /// The result of `job` for `api` as solved before, or None.
    pub fn get(&self, api: &ApiSpec, config: &GenConfig, index: usize, job: Job) -> Option<JobResult> {
        let key = key(api, config, index, job);
        let bytes = std::fs::read(self.path(&key)).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        if entry.key != key {
            return None;
        }
        Some(match (entry.solved, job) {
            (Stored::Conform(s), Job::Conform) => JobResult::Conform(Ok(s)),
            (Stored::Huge(m), Job::Huge) => JobResult::Huge(Ok(m)),
            (Stored::Violate(k, m), Job::Violate(j)) if k == j => JobResult::Violate(k, Ok(m)),
            _ => return None,
        })
    }

    /// Keeps a successful `result`; a failure to write is ignored (the next run solves again).
    pub fn put(&self, api: &ApiSpec, config: &GenConfig, index: usize, job: Job, result: &JobResult) {
        let solved = match result {
            JobResult::Conform(Ok(s)) => Stored::Conform(s.clone()),
            JobResult::Huge(Ok(m)) => Stored::Huge(m.clone()),
            JobResult::Violate(k, Ok(m)) => Stored::Violate(*k, m.clone()),
            _ => return,
        };
        let key = key(api, config, index, job);
        let path = self.path(&key);
        if let Ok(bytes) = serde_json::to_vec(&Entry { key, solved }) {
            let _ = crate::check::write_cache(&path, &bytes);
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        self.dir.join(format!("{:016x}.json", h.finish()))
    }
}

/// Everything a job's models depend on, as text: the API as checked (its constraints, rules and
/// spans), the settings, the index that seeds it, the job.
fn key(api: &ApiSpec, config: &GenConfig, index: usize, job: Job) -> String {
    format!("{api:?}\n{config:?}\n{index}\n{job:?}")
}

#[cfg(test)]
mod tests {
    use super::SolveCache;
    use crate::gen::{run_job, GenConfig, Job, JobResult};

    #[test]
    fn a_solved_job_is_read_back_for_its_own_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SolveCache::at(dir.path().to_path_buf());
        let checked = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.exp(input: Tensor) -> Tensor { input.ndim <= 2; }");
        let api = &checked.spec.apis[0];
        let config = GenConfig { pool_size: 4, ..GenConfig::default() };
        assert!(cache.get(api, &config, 0, Job::Conform).is_none());
        let solved = run_job(api, &config, 0, Job::Conform);
        cache.put(api, &config, 0, Job::Conform, &solved);
        let (JobResult::Conform(Ok(fresh)), Some(JobResult::Conform(Ok(read)))) = (&solved, cache.get(api, &config, 0, Job::Conform)) else {
            panic!("no conforming models solved and read back")
        };
        assert_eq!(fresh.models, read.models);
        assert_eq!(fresh.boundary, read.boundary);
        // Another seed, another index, another job: misses.
        assert!(cache.get(api, &GenConfig { seed: 1, ..config.clone() }, 0, Job::Conform).is_none());
        assert!(cache.get(api, &config, 1, Job::Conform).is_none());
        assert!(cache.get(api, &config, 0, Job::Huge).is_none());
        // A corrupt entry is a miss, not an error.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::write(e.unwrap().path(), b"{not json").unwrap();
        }
        assert!(cache.get(api, &config, 0, Job::Conform).is_none());
    }
}

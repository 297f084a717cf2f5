//! `--shard K/N`: which APIs (or spec files) one of N processes takes, so that N processes on N
//! machines cover a spec set once. The split is a pure function of the names, their costs and N:
//! every shard computes the same partition without talking to the others.
use std::fmt;

/// Shard `index` (1-based, as Slurm's `--array=1-N` counts) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Why a `--shard` value is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardError {
    /// Not `K/N` with two whole numbers.
    Syntax,
    /// N is 0.
    NoShards,
    /// K is 0 or above N.
    OutOfRange { index: u32, count: u32 },
}

impl Shard {
    /// The whole campaign as one shard.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Reads `K/N`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let (k, n) = text.trim().split_once('/').ok_or(ShardError::Syntax)?;
        let number = |s: &str| if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) { s.parse::<u32>().map_err(|_| ShardError::Syntax) } else { Err(ShardError::Syntax) };
        let (index, count) = (number(k.trim())?, number(n.trim())?);
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if index == 0 || index > count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The items this shard takes, as indexes into `costs` (one cost per item, names giving
    /// the order ties are broken in). Longest processing time first: items by falling cost
    /// (then name) go to the shard with the least cost so far (then the lowest number), which
    /// keeps the most loaded shard within the largest item of the ideal split.
    pub fn take(self, names: &[&str], costs: &[f64]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..names.len()).collect();
        let cost = |i: usize| costs.get(i).copied().filter(|c| c.is_finite() && *c > 0.0).unwrap_or(1.0);
        order.sort_by(|&a, &b| cost(b).total_cmp(&cost(a)).then_with(|| names[a].cmp(names[b])).then(a.cmp(&b)));
        let mut load = vec![0.0f64; self.count as usize];
        let mut mine = Vec::new();
        for i in order {
            let lightest = (0..load.len()).min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b))).unwrap_or(0);
            load[lightest] += cost(i);
            if lightest + 1 == self.index as usize {
                mine.push(i);
            }
        }
        mine.sort_unstable();
        mine
    }

    /// The seed of this shard's case stream: the campaign's seed for a single shard (so an
    /// unsharded run is unchanged), else one mixed with K and N, so two shards never draw the
    /// same stream even where they share an API.
    pub fn seed(self, seed: u64) -> u64 {
        if self.count == 1 {
            return seed;
        }
        crate::gen::mix(seed ^ crate::gen::mix((u64::from(self.count) << 32) | u64::from(self.index)))
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl fmt::Display for ShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardError::Syntax => f.write_str("a shard is written K/N with two whole numbers"),
            ShardError::NoShards => f.write_str("N, the number of shards, is 0"),
            ShardError::OutOfRange { index, count } => write!(f, "K is {index}, but shards are numbered 1 to {count}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Shard, ShardError};

    #[test]
    fn parse_accepts_k_of_n_and_nothing_else() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse("3/2"), Err(ShardError::OutOfRange { index: 3, count: 2 }));
        assert_eq!(Shard::parse("0/2"), Err(ShardError::OutOfRange { index: 0, count: 2 }));
        assert_eq!(Shard::parse("0/0"), Err(ShardError::NoShards));
        for bad in ["a/b", "1", "1/", "/2", "-1/2", "1/2/3", "99999999999/2"] {
            assert_eq!(Shard::parse(bad), Err(ShardError::Syntax), "{bad}");
        }
    }

    #[test]
    fn shards_cover_every_item_once_and_balance_cost() {
        let names: Vec<String> = (0..37).map(|i| format!("torch.op{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let costs: Vec<f64> = (0..37).map(|i| 1.0 + (i % 7) as f64).collect();
        for n in 1..=6 {
            let mut seen = vec![0; names.len()];
            let mut loads = Vec::new();
            for k in 1..=n {
                let mine = Shard { index: k, count: n }.take(&names, &costs);
                assert_eq!(mine, Shard { index: k, count: n }.take(&names, &costs), "deterministic");
                loads.push(mine.iter().map(|&i| costs[i]).sum::<f64>());
                for i in mine {
                    seen[i] += 1;
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "n={n}: {seen:?}");
            let (max, min) = (loads.iter().cloned().fold(0.0, f64::max), loads.iter().cloned().fold(f64::MAX, f64::min));
            assert!(max - min <= 7.0, "n={n}: {loads:?}");
        }
    }

    #[test]
    fn seeds_differ_per_shard_and_one_shard_keeps_the_seed() {
        assert_eq!(Shard::ALL.seed(42), 42);
        let seeds: Vec<u64> = (1..=4).map(|k| Shard { index: k, count: 4 }.seed(42)).collect();
        for (i, a) in seeds.iter().enumerate() {
            assert!(seeds[i + 1..].iter().all(|b| a != b));
        }
    }
}

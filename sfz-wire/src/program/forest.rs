//! A small random forest of CART trees for binary labels, trained and evaluated in Rust and
//! stored as data (serde). Soft assertions need a few hundred nodes per op, far below what a
//! machine-learning crate's build time would buy.
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A node of a tree, in a flat array: a split or a leaf.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// `features[feature] <= threshold` goes to `left`, else `right` (indices into the array).
    Split { feature: u16, threshold: f64, left: u32, right: u32 },
    /// The fraction of positive training samples that reached the leaf.
    Leaf(f64),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    pub fn predict(&self, x: &[f64]) -> f64 {
        let mut i = 0usize;
        loop {
            match &self.nodes[i] {
                Node::Leaf(p) => return *p,
                Node::Split { feature, threshold, left, right } => {
                    let v = x.get(*feature as usize).copied().unwrap_or(0.0);
                    i = if v <= *threshold { *left as usize } else { *right as usize };
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    pub trees: Vec<Tree>,
}

/// Training settings.
#[derive(Clone, Debug)]
pub struct ForestConfig {
    pub trees: usize,
    pub max_depth: usize,
    pub min_leaf: usize,
    pub seed: u64,
}

impl Default for ForestConfig {
    fn default() -> Self {
        ForestConfig { trees: 15, max_depth: 8, min_leaf: 3, seed: 0 }
    }
}

impl Forest {
    /// The mean of the trees' leaf probabilities.
    pub fn predict(&self, x: &[f64]) -> f64 {
        if self.trees.is_empty() {
            return 0.0;
        }
        self.trees.iter().map(|t| t.predict(x)).sum::<f64>() / self.trees.len() as f64
    }

    /// Fits a forest: each tree on a bootstrap sample, each split among a random subset of
    /// features (√n of them), thresholds at midpoints, Gini impurity.
    pub fn fit(xs: &[Vec<f64>], ys: &[bool], config: &ForestConfig) -> Forest {
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        let n = xs.len();
        let trees = (0..config.trees)
            .map(|_| {
                let sample: Vec<usize> = if n == 0 { Vec::new() } else { (0..n).map(|_| rng.random_range(0..n)).collect() };
                let mut nodes = Vec::new();
                grow(xs, ys, sample, 0, config, &mut rng, &mut nodes);
                Tree { nodes }
            })
            .collect();
        Forest { trees }
    }
}

fn grow(xs: &[Vec<f64>], ys: &[bool], idx: Vec<usize>, depth: usize, c: &ForestConfig, rng: &mut ChaCha8Rng, nodes: &mut Vec<Node>) -> u32 {
    let me = nodes.len() as u32;
    let pos = idx.iter().filter(|&&i| ys[i]).count();
    let p = if idx.is_empty() { 0.0 } else { pos as f64 / idx.len() as f64 };
    nodes.push(Node::Leaf(p));
    if depth >= c.max_depth || idx.len() < 2 * c.min_leaf || pos == 0 || pos == idx.len() {
        return me;
    }
    let nf = xs[idx[0]].len();
    let mut features: Vec<usize> = (0..nf).collect();
    features.shuffle(rng);
    features.truncate(((nf as f64).sqrt().ceil() as usize).max(1));
    let mut best: Option<(f64, usize, f64)> = None;
    for &f in &features {
        let mut vals: Vec<(f64, bool)> = idx.iter().map(|&i| (xs[i][f], ys[i])).collect();
        vals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total = vals.len();
        let mut left_pos = 0usize;
        for k in 1..total {
            left_pos += vals[k - 1].1 as usize;
            if vals[k].0 <= vals[k - 1].0 || k < c.min_leaf || total - k < c.min_leaf {
                continue;
            }
            let gini = |n: usize, p: usize| {
                let q = p as f64 / n as f64;
                n as f64 * 2.0 * q * (1.0 - q)
            };
            let score = gini(k, left_pos) + gini(total - k, pos - left_pos);
            if best.is_none_or(|(s, ..)| score < s) {
                best = Some((score, f, vals[k - 1].0 + (vals[k].0 - vals[k - 1].0) / 2.0));
            }
        }
    }
    let Some((_, feature, threshold)) = best else { return me };
    let (l, r): (Vec<usize>, Vec<usize>) = idx.into_iter().partition(|&i| xs[i][feature] <= threshold);
    let left = grow(xs, ys, l, depth + 1, c, rng, nodes);
    let right = grow(xs, ys, r, depth + 1, c, rng, nodes);
    nodes[me as usize] = Node::Split { feature: feature as u16, threshold, left, right };
    me
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_a_threshold() {
        // Label: x0 > 88 (exp overflows in float32).
        let xs: Vec<Vec<f64>> = (0..400).map(|i| vec![i as f64 * 0.5 - 50.0, (i % 7) as f64]).collect();
        let ys: Vec<bool> = xs.iter().map(|x| x[0] > 88.0).collect();
        let f = Forest::fit(&xs, &ys, &ForestConfig::default());
        assert!(f.predict(&[120.0, 3.0]) > 0.9);
        assert!(f.predict(&[0.0, 3.0]) < 0.1);
        let text = serde_json::to_string(&f).unwrap();
        let back: Forest = serde_json::from_str(&text).unwrap();
        assert_eq!(back.predict(&[120.0, 3.0]), f.predict(&[120.0, 3.0]));
    }
}

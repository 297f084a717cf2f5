//! Did-you-mean suggestions: the candidate closest to a mistyped name.

/// The candidate closest to `name` by edit distance, if close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates.into_iter().map(|c| (edit_distance(name, c), c)).filter(|&(d, c)| d <= limit && c != name).min_by_key(|&(d, c)| (d, c.len(), c)).map(|(_, c)| c)
}

/// Edit distance over chars where swapping two adjacent characters costs one edit
/// (optimal string alignment), since transposed letters are the commonest typo.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::{closest, edit_distance};

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("inptu", ["input", "weight"]), Some("input"));
        assert_eq!(closest("zzz", ["input", "weight"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("inptu", "input"), 1);
    }
}

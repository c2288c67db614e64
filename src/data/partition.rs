//! Horizontal partitioning: every party holds some rows of the same columns (dissertation
//! section 5.4: "we also randomly partition the data sets into subsets horizontally").

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;

use super::table::{DataError, Dataset, DatasetView};

/// Splits `data` into `parties` contiguous blocks whose sizes differ by at most one (the first
/// `rows % parties` blocks get the extra row), like `numpy.array_split`.
pub fn split_contiguous(data: &Dataset, parties: usize) -> Result<Vec<Dataset>, DataError> {
    let order: Vec<usize> = (0..data.rows()).collect();
    split_in_order(data, &order, parties)
}

/// Shuffles the rows with a ChaCha20 generator seeded by `seed`, then splits contiguously.
/// The same seed gives the same parties on every machine.
pub fn split_shuffled(
    data: &Dataset,
    parties: usize,
    seed: u64,
) -> Result<Vec<Dataset>, DataError> {
    let mut order: Vec<usize> = (0..data.rows()).collect();
    order.shuffle(&mut ChaCha20Rng::seed_from_u64(seed));
    split_in_order(data, &order, parties)
}

/// One party per distinct value of the group column, in sorted order of the values; rows keep
/// their file order within a party.
pub fn split_by_group(data: &Dataset, groups: &[String]) -> Result<Vec<Dataset>, DataError> {
    if groups.len() != data.rows() {
        return Err(DataError::Partition {
            source_name: data.source.clone(),
            reason: format!("{} group values for {} rows", groups.len(), data.rows()),
        });
    }
    let mut members: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (row, g) in groups.iter().enumerate() {
        members.entry(g).or_default().push(row);
    }
    Ok(members
        .into_iter()
        .map(|(g, rows)| data.select_rows(&rows, format!("{} [group {g}]", data.source)))
        .collect())
}

fn split_in_order(
    data: &Dataset,
    order: &[usize],
    parties: usize,
) -> Result<Vec<Dataset>, DataError> {
    let rows = order.len();
    if parties == 0 || parties > rows {
        return Err(DataError::Partition {
            source_name: data.source.clone(),
            reason: format!("{parties} parties requested for {rows} rows (need 1 to {rows})"),
        });
    }
    let (base, extra) = (rows / parties, rows % parties);
    let mut start = 0;
    Ok((0..parties)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let part = data.select_rows(
                &order[start..start + len],
                format!("{} [part {} of {parties}]", data.source, k + 1),
            );
            start += len;
            part
        })
        .collect())
}

/// Checks that every party has the same feature names in the same order as the first.
pub fn check_agreement(parties: &[DatasetView<'_>]) -> Result<(), DataError> {
    let named: Vec<(&str, &[String])> = parties.iter().map(|p| (p.source, p.names)).collect();
    check_names(&named)
}

/// [`check_agreement`] on `(source, feature names)` pairs, for rows not in memory (streamed
/// files): every party's names equal the first's, or the error names both sources and the
/// first difference.
pub fn check_names(parties: &[(&str, &[String])]) -> Result<(), DataError> {
    let Some(&(reference_source, reference)) = parties.first() else {
        return Ok(());
    };
    for &(source, names) in &parties[1..] {
        if let Some(difference) = difference(names, reference) {
            return Err(DataError::FeatureMismatch {
                party: source.to_string(),
                reference: reference_source.to_string(),
                difference,
            });
        }
    }
    Ok(())
}

/// How the feature names `names` ("here") differ from `reference` ("there"), in words, or
/// `None` when they are equal. Another count names the columns one side lacks (a column
/// missing in the middle would otherwise show as every later column shifted); the same count
/// names the first position that differs.
pub fn difference(names: &[String], reference: &[String]) -> Option<String> {
    if names.len() != reference.len() {
        let quoted = |list: Vec<&String>| {
            list.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let missing = quoted(reference.iter().filter(|n| !names.contains(n)).collect());
        let extra = quoted(names.iter().filter(|n| !reference.contains(n)).collect());
        let parts: Vec<String> = [("missing here", missing), ("not there", extra)]
            .into_iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(what, list)| format!("{what}: {list}"))
            .collect();
        return Some(format!(
            "{} features here, {} there ({})",
            names.len(),
            reference.len(),
            if parts.is_empty() {
                "a name repeated".to_string()
            } else {
                parts.join("; ")
            }
        ));
    }
    names
        .iter()
        .zip(reference)
        .position(|(mine, theirs)| mine != theirs)
        .map(|i| {
            format!(
                "feature {} is {:?} here but {:?} there",
                i + 1,
                names[i],
                reference[i]
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    fn numbered(rows: usize) -> Dataset {
        Dataset {
            source: "t.csv".into(),
            names: vec!["a".into()],
            x: Array2::from_shape_fn((rows, 1), |(i, _)| i as f64),
            y: Array1::from_shape_fn(rows, |i| (i % 2) as f64),
        }
    }

    #[test]
    fn contiguous_sizes_like_array_split() {
        let parts = split_contiguous(&numbered(10), 3).expect("valid split");
        let sizes: Vec<usize> = parts.iter().map(Dataset::rows).collect();
        assert_eq!(sizes, vec![4, 3, 3]);
        assert_eq!(parts[1].x[(0, 0)], 4.0);
        assert!(split_contiguous(&numbered(2), 3).is_err());
        assert!(split_contiguous(&numbered(2), 0).is_err());
    }

    #[test]
    fn shuffled_split_is_a_seeded_permutation() {
        let a = split_shuffled(&numbered(50), 4, 7).expect("valid split");
        let b = split_shuffled(&numbered(50), 4, 7).expect("valid split");
        assert_eq!(a, b);
        let mut seen: Vec<f64> = a.iter().flat_map(|d| d.x.iter().copied()).collect();
        seen.sort_by(f64::total_cmp);
        assert_eq!(seen, (0..50).map(|i| i as f64).collect::<Vec<_>>());
        assert_ne!(a, split_contiguous(&numbered(50), 4).expect("valid split"));
    }

    #[test]
    fn groups_sorted_by_value() {
        let groups: Vec<String> = ["b", "a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let parts = split_by_group(&numbered(4), &groups).expect("valid split");
        let firsts: Vec<f64> = parts.iter().map(|d| d.x[(0, 0)]).collect();
        assert_eq!(firsts, vec![1.0, 0.0, 3.0]);
        assert_eq!(parts[1].rows(), 2);
    }

    #[test]
    fn disagreement_names_the_column() {
        let a = numbered(3);
        let mut b = numbered(3);
        b.source = "b.csv".into();
        b.names = vec!["z".into()];
        let msg = check_agreement(&[a.view(), b.view()])
            .expect_err("mismatch")
            .to_string();
        assert!(
            msg.contains("b.csv") && msg.contains("\"z\"") && msg.contains("\"a\""),
            "{msg}"
        );
    }
}

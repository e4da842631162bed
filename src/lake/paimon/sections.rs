//! Key-range sections of a primary-key split's files, as Paimon's `IntervalPartition`
//! makes them (`paimon-core` `mergetree/compact/IntervalPartition.java`; the paimon
//! crate's `merge_tree_split_generator.rs` keeps its copy crate-private).
//!
//! Files whose key ranges (`DataFileMeta` min/max key) overlap, even through a chain
//! of others, fall in one section; sections never share a key. A section of one file
//! is read as it is (its rows hold each key once), so only files that overlap pay for
//! merging. Paimon packs several sections into one split and marks the split raw
//! convertible only when it holds a single file: a bucket tiered in rounds of new
//! keys (an `orders` table's rising order keys) would otherwise be merged although no
//! two of its files share a key.

use std::cmp::Ordering;

use paimon::spec::{BinaryRow, DataFileMeta, DataType, Datum};

/// A decoded min or max key: one value per key field, `None` for NULL.
type Key = Vec<Option<Datum>>;

/// Decodes a serialized `BinaryRow` key of `types`; `None` when it is empty,
/// malformed, of another arity, or holds NaN (which orders nowhere), so the caller
/// takes the files as overlapping.
fn decode(bytes: &[u8], types: &[DataType]) -> Option<Key> {
    if bytes.is_empty() {
        return None;
    }
    let row = BinaryRow::from_serialized_bytes(bytes).ok()?;
    if row.arity() as usize != types.len() {
        return None;
    }
    types
        .iter()
        .enumerate()
        .map(|(pos, ty)| match row.get_datum(pos, ty).ok()? {
            Some(Datum::Float(v)) if v.is_nan() => None,
            Some(Datum::Double(v)) if v.is_nan() => None,
            value => Some(value),
        })
        .collect()
}

/// Compares keys field by field, NULL first (Paimon's key order); `None` when two
/// values do not compare (the caller then takes the files as overlapping). Values
/// that compare equal but sort apart in Paimon (`-0.0`, `+0.0`) only merge sections.
fn compare(a: &Key, b: &Key) -> Option<Ordering> {
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.partial_cmp(y)?,
        };
        if order != Ordering::Equal {
            return Some(order);
        }
    }
    Some(Ordering::Equal)
}

/// Each item's key range, or `None` when one cannot be decoded or is inverted.
fn ranges<'a, T>(
    items: &'a [T],
    key_types: &[DataType],
    keys: impl Fn(&T) -> (&[u8], &[u8]),
) -> Option<Vec<(&'a T, Key, Key)>> {
    items
        .iter()
        .map(|item| {
            let (min, max) = keys(item);
            let (min, max) = (decode(min, key_types)?, decode(max, key_types)?);
            (compare(&min, &max)? != Ordering::Greater).then_some((item, min, max))
        })
        .collect()
}

/// The files grouped into sections that share no key, in ascending key order; all
/// files in one section when any key range cannot be decoded or compared (never a
/// missed merge).
pub(super) fn by_key_range<'a>(
    files: &'a [DataFileMeta],
    key_types: &[DataType],
) -> Vec<Vec<&'a DataFileMeta>> {
    sections(files, key_types, |f| (&f.min_key, &f.max_key))
}

/// [`by_key_range`] over anything with a serialized min and max key.
fn sections<'a, T>(
    items: &'a [T],
    key_types: &[DataType],
    keys: impl Fn(&T) -> (&[u8], &[u8]),
) -> Vec<Vec<&'a T>> {
    let one = || vec![items.iter().collect::<Vec<_>>()];
    if items.len() <= 1 || key_types.is_empty() {
        return one();
    }
    let Some(mut keyed) = ranges(items, key_types, keys) else {
        return one();
    };
    let mut comparable = true;
    keyed.sort_by(|a, b| {
        compare(&a.1, &b.1)
            .and_then(|o| Some(o.then(compare(&a.2, &b.2)?)))
            .unwrap_or_else(|| {
                comparable = false;
                Ordering::Equal
            })
    });
    if !comparable {
        return one();
    }
    let mut sections: Vec<Vec<&T>> = Vec::new();
    // the largest max key of the current section
    let mut bound: Option<Key> = None;
    for (item, min, max) in keyed {
        let starts_section = match &bound {
            None => true,
            Some(b) => match compare(&min, b) {
                Some(order) => order == Ordering::Greater,
                None => return one(),
            },
        };
        if starts_section {
            sections.push(Vec::new());
            bound = Some(max);
        } else if let Some(b) = &bound {
            match compare(&max, b) {
                Some(Ordering::Greater) => bound = Some(max),
                Some(_) => {}
                None => return one(),
            }
        }
        if let Some(section) = sections.last_mut() {
            section.push(item);
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;
    use paimon::spec::IntType;

    /// A serialized `BinaryRow` of int fields: the arity (big endian), then an 8-byte
    /// header and null bit set, then 8 bytes per field (little endian).
    fn int_row(values: &[i32]) -> Vec<u8> {
        let mut bytes = (values.len() as i32).to_be_bytes().to_vec();
        bytes.extend([0u8; 8]);
        for v in values {
            bytes.extend(v.to_le_bytes());
            bytes.extend([0u8; 4]);
        }
        bytes
    }

    fn int_key(value: i32) -> Vec<u8> {
        int_row(&[value])
    }

    type File = (&'static str, Vec<u8>, Vec<u8>);

    fn file(name: &'static str, min: i32, max: i32) -> File {
        (name, int_key(min), int_key(max))
    }

    fn names(files: &[File]) -> Vec<Vec<&'static str>> {
        let int = [DataType::Int(IntType::new())];
        sections(files, &int, |f| (&f.1, &f.2))
            .into_iter()
            .map(|s| s.into_iter().map(|f| f.0).collect())
            .collect()
    }

    #[test]
    fn files_that_share_no_key_are_sections_of_their_own() {
        let files = [
            file("new", 100, 199),
            file("old", 0, 99),
            file("updates", 150, 300),
            file("inside", 160, 170),
        ];
        assert_eq!(
            names(&files),
            vec![vec!["old"], vec!["new", "updates", "inside"]]
        );
        // touching ranges share a key
        assert_eq!(
            names(&[file("a", 0, 10), file("b", 10, 20)]),
            vec![vec!["a", "b"]]
        );
        assert_eq!(names(&[file("a", 0, 10)]), vec![vec!["a"]]);
    }

    #[test]
    fn undecodable_or_inverted_ranges_are_one_section() {
        let missing = ("b", Vec::new(), int_key(20));
        assert_eq!(names(&[file("a", 0, 10), missing]), vec![vec!["a", "b"]]);
        let two_fields = int_row(&[1, 1]);
        assert_eq!(
            names(&[file("a", 0, 10), ("b", two_fields.clone(), two_fields)]),
            vec![vec!["a", "b"]]
        );
        assert_eq!(
            names(&[file("a", 10, 0), file("b", 20, 30)]),
            vec![vec!["a", "b"]]
        );
    }
}

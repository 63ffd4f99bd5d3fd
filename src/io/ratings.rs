//! Rating triplets `user item rating [timestamp]`, as text or as 12-byte binary records.
//!
//! Text: fields separated by tabs, spaces or commas (runs of separators count as one, so ids
//! cannot contain them). Ids are arbitrary strings, remapped to dense indices through an
//! [`IdMap`]. An optional header line is detected: the first line whose rating field is not a
//! number is skipped. Lines starting with `#` and blank lines are skipped; the timestamp is
//! ignored.
//!
//! Binary: little-endian records `{i32 user, i32 item, f32 rating}` with ids used as indices.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

use super::atomic::{io_err, write_atomically};
use super::text::{open, parse_f32, read_full, show, write_f32, Lines, READ_BUF};
use crate::sparse::Coo;
use crate::{Error, Result};

/// Ratings as parallel arrays; `users[k]` rated `items[k]` with `values[k]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ratings {
    /// User index of each rating, `< n_users`.
    pub users: Vec<u32>,
    /// Item index of each rating, `< n_items`.
    pub items: Vec<u32>,
    /// Rating values.
    pub values: Vec<f32>,
    /// Number of users (the row count of the rating matrix).
    pub n_users: usize,
    /// Number of items (the column count of the rating matrix).
    pub n_items: usize,
}

impl Ratings {
    /// Number of ratings.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no ratings.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The `n_users × n_items` rating matrix (validated; duplicates kept).
    pub fn to_coo(&self) -> Result<Coo> {
        Coo::new(
            self.n_users,
            self.n_items,
            self.users.clone(),
            self.items.clone(),
            self.values.clone(),
        )
    }

    fn check(&self) -> Result<()> {
        if self.users.len() != self.values.len() || self.items.len() != self.values.len() {
            return Err(Error::invalid(
                "ratings",
                format!(
                    "array lengths differ: {} users, {} items, {} values",
                    self.users.len(),
                    self.items.len(),
                    self.values.len()
                ),
            ));
        }
        Ok(())
    }
}

/// The mapping between string ids and dense indices, for users and items separately.
/// Indices are assigned in order of first appearance, starting at 0.
#[derive(Clone, Debug, Default)]
pub struct IdMap {
    user_index: HashMap<String, u32>,
    user_ids: Vec<String>,
    item_index: HashMap<String, u32>,
    item_ids: Vec<String>,
}

impl IdMap {
    /// An empty mapping.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of distinct users seen.
    pub fn n_users(&self) -> usize {
        self.user_ids.len()
    }

    /// Number of distinct items seen.
    pub fn n_items(&self) -> usize {
        self.item_ids.len()
    }

    /// The index of user `id`, if seen.
    pub fn user(&self, id: &str) -> Option<u32> {
        self.user_index.get(id).copied()
    }

    /// The index of item `id`, if seen.
    pub fn item(&self, id: &str) -> Option<u32> {
        self.item_index.get(id).copied()
    }

    /// The id of user `index`, if assigned.
    pub fn user_id(&self, index: u32) -> Option<&str> {
        self.user_ids.get(index as usize).map(String::as_str)
    }

    /// The id of item `index`, if assigned.
    pub fn item_id(&self, index: u32) -> Option<&str> {
        self.item_ids.get(index as usize).map(String::as_str)
    }

    /// All user ids, indexed by user index.
    pub fn user_ids(&self) -> &[String] {
        &self.user_ids
    }

    /// All item ids, indexed by item index.
    pub fn item_ids(&self) -> &[String] {
        &self.item_ids
    }
}

/// Returns the index of `id`, assigning the next one if new; `None` past the u32 range.
fn intern(index: &mut HashMap<String, u32>, ids: &mut Vec<String>, id: &str) -> Option<u32> {
    if let Some(&i) = index.get(id) {
        return Some(i);
    }
    let i = u32::try_from(ids.len()).ok()?;
    index.insert(id.to_owned(), i);
    ids.push(id.to_owned());
    Some(i)
}

/// Reads a text rating file, mapping ids through `ids`.
///
/// Ids already in `ids` keep their index; unseen ids get the next free indices, so reading a
/// training file and then a test file with the same map gives both consistent indices (a test
/// user absent from training gets an index ≥ the training `n_users`). `n_users` and `n_items`
/// of the result are the map's sizes after reading, so they cover every file read so far.
pub fn read_ratings(path: impl AsRef<Path>, ids: &mut IdMap) -> Result<Ratings> {
    let path = path.as_ref();
    let (reader, _) = open(path)?;
    parse_text(reader, path, ids, None)
}

/// [`read_ratings`] that also rejects a rating outside `lo..=hi` with the file and line.
pub fn read_ratings_in_range(
    path: impl AsRef<Path>,
    ids: &mut IdMap,
    (lo, hi): (f32, f32),
) -> Result<Ratings> {
    let path = path.as_ref();
    let (reader, _) = open(path)?;
    parse_text(reader, path, ids, Some((lo, hi)))
}

fn parse_text<R: BufRead>(
    reader: R,
    path: &Path,
    ids: &mut IdMap,
    range: Option<(f32, f32)>,
) -> Result<Ratings> {
    let mut lines = Lines::new(reader, path);
    let mut out = Ratings::default();
    let mut first = true;
    while let Some((ln, line)) = lines.next_line()? {
        let mut f: [&[u8]; 4] = [&[]; 4];
        let mut n = 0;
        for field in line
            .split(|&b| b == b'\t' || b == b' ' || b == b',')
            .filter(|f| !f.is_empty())
        {
            if n < 4 {
                f[n] = field;
            }
            n += 1;
        }
        if n == 0 || f[0][0] == b'#' {
            continue;
        }
        let is_first = std::mem::replace(&mut first, false);
        if !(3..=4).contains(&n) {
            return Err(Error::parse(
                path,
                ln,
                format!("expected 3 or 4 fields (user item rating [timestamp]), found {n}"),
            ));
        }
        let r = match parse_f32(f[2], "rating") {
            Ok(r) => r,
            Err(_) if is_first && fast_float2::parse::<f32, _>(f[2]).is_err() => continue,
            Err(m) => return Err(Error::parse(path, ln, m)),
        };
        if let Some((lo, hi)) = range.filter(|&(lo, hi)| !(lo..=hi).contains(&r)) {
            return Err(Error::parse(
                path,
                ln,
                format!("rating {r} is outside [{lo}, {hi}]"),
            ));
        }
        let u = id(path, ln, f[0], "user")?;
        let i = id(path, ln, f[1], "item")?;
        let too_many = || Error::parse(path, ln, "more than 2^32 distinct ids");
        let u = intern(&mut ids.user_index, &mut ids.user_ids, u).ok_or_else(too_many)?;
        let i = intern(&mut ids.item_index, &mut ids.item_ids, i).ok_or_else(too_many)?;
        out.users.push(u);
        out.items.push(i);
        out.values.push(r);
    }
    if out.is_empty() {
        return Err(Error::parse(
            path,
            lines.line() + 1,
            "no ratings: expected lines `user item rating [timestamp]`",
        ));
    }
    out.n_users = ids.n_users();
    out.n_items = ids.n_items();
    Ok(out)
}

fn id<'a>(path: &Path, ln: u64, f: &'a [u8], what: &str) -> Result<&'a str> {
    std::str::from_utf8(f).map_err(|_| {
        Error::parse(
            path,
            ln,
            format!("{what} id {} is not valid UTF-8", show(f)),
        )
    })
}

/// Writes `r` as tab-separated `user item rating` lines with numeric indices, replacing
/// `path` atomically.
pub fn write_ratings(path: impl AsRef<Path>, r: &Ratings) -> Result<()> {
    let path = path.as_ref();
    r.check()?;
    write_atomically(path, |w| {
        let mut write = || -> std::io::Result<()> {
            for k in 0..r.len() {
                write!(w, "{}\t{}\t", r.users[k], r.items[k])?;
                write_f32(w, r.values[k])?;
                w.write_all(b"\n")?;
            }
            Ok(())
        };
        write().map_err(io_err(path))
    })
}

/// Writes `r` as tab-separated `user item rating` lines with the original string ids from
/// `ids`, replacing `path` atomically. Fails if an index has no id in `ids`.
pub fn write_ratings_with_ids(path: impl AsRef<Path>, r: &Ratings, ids: &IdMap) -> Result<()> {
    let path = path.as_ref();
    r.check()?;
    for k in 0..r.len() {
        if ids.user_id(r.users[k]).is_none() || ids.item_id(r.items[k]).is_none() {
            return Err(Error::invalid(
                "ratings",
                format!(
                    "rating {k} (user {}, item {}) has an index with no id in the map",
                    r.users[k], r.items[k]
                ),
            ));
        }
    }
    write_atomically(path, |w| {
        let mut write = || -> std::io::Result<()> {
            for k in 0..r.len() {
                let u = ids.user_id(r.users[k]).unwrap_or_default();
                let i = ids.item_id(r.items[k]).unwrap_or_default();
                write!(w, "{u}\t{i}\t")?;
                write_f32(w, r.values[k])?;
                w.write_all(b"\n")?;
            }
            Ok(())
        };
        write().map_err(io_err(path))
    })
}

/// Size of one binary record.
const RECORD: usize = 12;

/// Reads binary rating records `{i32 user, i32 item, f32 rating}` (little-endian). Ids are
/// used directly as indices; `n_users` / `n_items` are the largest id + 1. Errors (line 0)
/// name the 0-based record number and its byte offset: a size that is not a multiple of 12,
/// negative ids, non-finite ratings, an empty file.
pub fn read_ratings_binary(path: impl AsRef<Path>) -> Result<Ratings> {
    let path = path.as_ref();
    let (mut reader, size) = open(path)?;
    let cap = (size / RECORD as u64).min(1 << 26) as usize;
    let mut out = Ratings {
        users: Vec::with_capacity(cap),
        items: Vec::with_capacity(cap),
        values: Vec::with_capacity(cap),
        n_users: 0,
        n_items: 0,
    };
    let mut chunk = vec![0u8; READ_BUF / RECORD * RECORD];
    let mut record: u64 = 0;
    loop {
        let got = read_full(&mut reader, &mut chunk).map_err(|e| Error::io(path, e))?;
        let whole = got / RECORD * RECORD;
        for rec in chunk[..whole].chunks_exact(RECORD) {
            let word = |i: usize| [rec[i], rec[i + 1], rec[i + 2], rec[i + 3]];
            let (u, i, r) = (
                i32::from_le_bytes(word(0)),
                i32::from_le_bytes(word(4)),
                f32::from_le_bytes(word(8)),
            );
            let at = || format!("record {record} (byte offset {})", record * RECORD as u64);
            if u < 0 || i < 0 {
                return Err(Error::parse(
                    path,
                    0,
                    format!("{}: negative id (user {u}, item {i})", at()),
                ));
            }
            if !r.is_finite() {
                return Err(Error::parse(
                    path,
                    0,
                    format!("{}: rating {r} is not finite", at()),
                ));
            }
            out.users.push(u as u32);
            out.items.push(i as u32);
            out.values.push(r);
            out.n_users = out.n_users.max(u as usize + 1);
            out.n_items = out.n_items.max(i as usize + 1);
            record += 1;
        }
        if got < chunk.len() {
            if got != whole {
                let bytes = record * RECORD as u64 + (got - whole) as u64;
                return Err(Error::parse(
                    path,
                    0,
                    format!(
                        "size {bytes} bytes is not a multiple of {RECORD}: record {record} at \
                         byte offset {} is truncated",
                        record * RECORD as u64
                    ),
                ));
            }
            break;
        }
    }
    if out.is_empty() {
        return Err(Error::parse(path, 0, "empty file: no rating records"));
    }
    Ok(out)
}

/// Writes `r` as binary records `{i32 user, i32 item, f32 rating}` (little-endian), replacing
/// `path` atomically. Fails if an index exceeds `i32::MAX` or a rating is not finite.
pub fn write_ratings_binary(path: impl AsRef<Path>, r: &Ratings) -> Result<()> {
    let path = path.as_ref();
    r.check()?;
    for k in 0..r.len() {
        if r.users[k] > i32::MAX as u32 || r.items[k] > i32::MAX as u32 {
            return Err(Error::invalid(
                "ratings",
                format!("rating {k}: index beyond i32::MAX cannot be stored"),
            ));
        }
        if !r.values[k].is_finite() {
            return Err(Error::invalid(
                "ratings",
                format!("rating {k}: value {} is not finite", r.values[k]),
            ));
        }
    }
    write_atomically(path, |w| {
        let mut write = || -> std::io::Result<()> {
            for k in 0..r.len() {
                w.write_all(&(r.users[k] as i32).to_le_bytes())?;
                w.write_all(&(r.items[k] as i32).to_le_bytes())?;
                w.write_all(&r.values[k].to_le_bytes())?;
            }
            Ok(())
        };
        write().map_err(io_err(path))
    })
}

//! A trained model: P and Q on the host, `predict`, and two file formats.
//!
//! **Binary** (`.wgmf`), little-endian:
//!
//! | bytes | field |
//! |-------|-------|
//! | 8 | magic `WGSPMF\r\n` |
//! | 4 | version, u32 = 1 |
//! | 4 | k, u32 |
//! | 8 | users m, u64 |
//! | 8 | items n, u64 |
//! | 4 | flags, u32 (bit 0: id strings follow Q) |
//! | 4·m·k | P, f32 row-major |
//! | 4·n·k | Q, f32 row-major |
//! | … | with flag bit 0: m user ids then n item ids, each a u32 byte length and UTF-8 |
//!
//! **LIBMF text**: `f 0`, `m M`, `n N`, `k K`, `b 0`, then one line per user `pU T v…` and
//! per item `qI T v…` (rows are dense indices; `F` rows, LIBMF's rows without ratings, are
//! read as given).

use std::io::{BufRead, Read, Write};
use std::path::Path;

use crate::io::write_atomically;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"WGSPMF\r\n";
const VERSION: u32 = 1;
const HEADER: u64 = 36;

/// Trained factors: p_u·q_v predicts the rating of user u on item v.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// Features per row.
    pub k: usize,
    /// Users (rows of P).
    pub n_users: usize,
    /// Items (rows of Q).
    pub n_items: usize,
    /// P, `n_users × k` row-major.
    pub p: Vec<f32>,
    /// Q, `n_items × k` row-major.
    pub q: Vec<f32>,
    /// Original user ids by index, when known.
    pub user_ids: Option<Vec<String>>,
    /// Original item ids by index, when known.
    pub item_ids: Option<Vec<String>>,
}

impl Model {
    /// The prediction p_u·q_v, or an error naming an index out of range.
    pub fn predict(&self, user: u32, item: u32) -> Result<f32> {
        let (u, v) = (user as usize, item as usize);
        if u >= self.n_users || v >= self.n_items {
            return Err(Error::invalid(
                "prediction pair",
                format!(
                    "(user {u}, item {v}) outside the model's {} users × {} items",
                    self.n_users, self.n_items
                ),
            ));
        }
        let k = self.k;
        Ok(self.p[u * k..(u + 1) * k]
            .iter()
            .zip(&self.q[v * k..(v + 1) * k])
            .map(|(a, b)| a * b)
            .sum())
    }

    /// RMSE over `ratings` (indices as the model's) and the number of ratings skipped because
    /// their user or item lies outside the model; `None` when none remain.
    pub fn rmse(&self, ratings: &crate::io::Ratings) -> (Option<f64>, usize) {
        let (mut sse, mut n, mut skipped) = (0f64, 0usize, 0usize);
        for k in 0..ratings.len() {
            match self.predict(ratings.users[k], ratings.items[k]) {
                Ok(p) => {
                    sse += (ratings.values[k] as f64 - p as f64).powi(2);
                    n += 1;
                }
                Err(_) => skipped += 1,
            }
        }
        ((n > 0).then(|| (sse / n as f64).sqrt()), skipped)
    }

    /// Writes the binary format, replacing `path` atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let ids = match (&self.user_ids, &self.item_ids) {
            (Some(u), Some(i)) => Some((u, i)),
            _ => None,
        };
        write_atomically(path, |w| {
            let mut write = || -> std::io::Result<()> {
                w.write_all(MAGIC)?;
                w.write_all(&VERSION.to_le_bytes())?;
                w.write_all(&(self.k as u32).to_le_bytes())?;
                w.write_all(&(self.n_users as u64).to_le_bytes())?;
                w.write_all(&(self.n_items as u64).to_le_bytes())?;
                w.write_all(&(ids.is_some() as u32).to_le_bytes())?;
                w.write_all(bytemuck::cast_slice(&self.p))?;
                w.write_all(bytemuck::cast_slice(&self.q))?;
                if let Some((u, i)) = ids {
                    for s in u.iter().chain(i.iter()) {
                        w.write_all(&(s.len() as u32).to_le_bytes())?;
                        w.write_all(s.as_bytes())?;
                    }
                }
                Ok(())
            };
            write().map_err(|e| Error::io(path, e))
        })
    }

    /// Reads the binary format. A wrong magic or version, a size that does not match the
    /// header, or truncated ids are [`Error::Parse`] naming the file and byte offset.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bad = |m: String| Error::parse(path, 0, m);
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut r = std::io::BufReader::new(file);
        let mut head = [0u8; HEADER as usize];
        r.read_exact(&mut head).map_err(|_| {
            bad(format!(
                "{size} bytes: shorter than the {HEADER}-byte header"
            ))
        })?;
        if &head[..8] != MAGIC {
            return Err(bad("not a wgsparse MF model (bad magic)".into()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap());
        if u32_at(8) != VERSION {
            return Err(bad(format!(
                "version {} (this build reads {VERSION})",
                u32_at(8)
            )));
        }
        let (k, m, n, flags) = (u32_at(12) as u64, u64_at(16), u64_at(24), u32_at(32));
        let floats = (m.checked_add(n))
            .and_then(|r| r.checked_mul(k))
            .ok_or_else(|| bad("header sizes overflow".into()))?;
        let need = floats
            .checked_mul(4)
            .and_then(|b| b.checked_add(HEADER))
            .ok_or_else(|| bad("header sizes overflow".into()))?;
        if k == 0 || size < need || (flags & 1 == 0 && size != need) {
            return Err(bad(format!(
                "{size} bytes, but the header (k {k}, {m} users, {n} items) needs {need}: \
                 truncated or corrupt"
            )));
        }
        let mut read_f32 = |count: u64| -> Result<Vec<f32>> {
            let mut v = vec![0f32; count as usize];
            r.read_exact(bytemuck::cast_slice_mut(&mut v))
                .map_err(|e| Error::io(path, e))?;
            Ok(v)
        };
        let p = read_f32(m * k)?;
        let q = read_f32(n * k)?;
        let (user_ids, item_ids) = if flags & 1 != 0 {
            let mut at = need;
            let mut strings = |count: u64| -> Result<Vec<String>> {
                (0..count)
                    .map(|_| {
                        let mut len = [0u8; 4];
                        r.read_exact(&mut len)
                            .map_err(|_| bad(format!("ids truncated at byte {at}")))?;
                        let len = u32::from_le_bytes(len) as u64;
                        if at + 4 + len > size {
                            return Err(bad(format!("id at byte {at} runs past the end")));
                        }
                        let mut s = vec![0u8; len as usize];
                        r.read_exact(&mut s).map_err(|e| Error::io(path, e))?;
                        at += 4 + len;
                        String::from_utf8(s)
                            .map_err(|_| bad(format!("id at byte {at} is not UTF-8")))
                    })
                    .collect()
            };
            (Some(strings(m)?), Some(strings(n)?))
        } else {
            (None, None)
        };
        Ok(Model {
            k: k as usize,
            n_users: m as usize,
            n_items: n as usize,
            p,
            q,
            user_ids,
            item_ids,
        })
    }

    /// Writes LIBMF's text model format, replacing `path` atomically.
    pub fn save_libmf(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        write_atomically(path, |w| {
            let mut write = || -> std::io::Result<()> {
                writeln!(
                    w,
                    "f 0\nm {}\nn {}\nk {}\nb 0",
                    self.n_users, self.n_items, self.k
                )?;
                for (tag, rows) in [('p', &self.p), ('q', &self.q)] {
                    for (i, row) in rows.chunks(self.k.max(1)).enumerate() {
                        write!(w, "{tag}{i} T")?;
                        for v in row {
                            write!(w, " {v}")?;
                        }
                        writeln!(w)?;
                    }
                }
                Ok(())
            };
            write().map_err(|e| Error::io(path, e))
        })
    }

    /// Reads LIBMF's text model format; malformed lines are [`Error::Parse`] with the line.
    pub fn load_libmf(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut lines = std::io::BufReader::new(file).lines();
        let line = std::cell::Cell::new(0u64);
        let mut next = |what: &str| -> Result<String> {
            line.set(line.get() + 1);
            match lines.next() {
                Some(Ok(l)) => Ok(l),
                Some(Err(e)) => Err(Error::io(path, e)),
                None => Err(Error::parse(
                    path,
                    line.get(),
                    format!("file ends before {what}"),
                )),
            }
        };
        let mut header = |key: &str| -> Result<u64> {
            let l = next(&format!("the `{key}` line"))?;
            let ln = line.get();
            let mut it = l.split_whitespace();
            match (it.next(), it.next().map(str::parse::<f64>)) {
                (Some(k), Some(Ok(v))) if k == key && v >= 0.0 => Ok(v as u64),
                _ => Err(Error::parse(
                    path,
                    ln,
                    format!("expected `{key} <number>`, found {l:?}"),
                )),
            }
        };
        header("f")?;
        let (m, n, k) = (header("m")?, header("n")?, header("k")?);
        header("b")?;
        if k == 0 || m.saturating_mul(k) > 1 << 34 || n.saturating_mul(k) > 1 << 34 {
            return Err(Error::parse(
                path,
                4,
                format!("implausible sizes m {m}, n {n}, k {k}"),
            ));
        }
        let mut rows = |tag: char, count: u64| -> Result<Vec<f32>> {
            let mut out = Vec::with_capacity((count * k) as usize);
            for i in 0..count {
                let l = next(&format!("row {tag}{i}"))?;
                let ln = line.get();
                let mut it = l.split_whitespace();
                if it.next() != Some(&format!("{tag}{i}")) || !matches!(it.next(), Some("T" | "F"))
                {
                    return Err(Error::parse(
                        path,
                        ln,
                        format!("expected `{tag}{i} T|F v…`"),
                    ));
                }
                let before = out.len();
                for v in it {
                    out.push(
                        v.parse::<f32>().map_err(|_| {
                            Error::parse(path, ln, format!("{v:?} is not a number"))
                        })?,
                    );
                }
                if out.len() - before != k as usize {
                    return Err(Error::parse(
                        path,
                        ln,
                        format!("{} values, expected k = {k}", out.len() - before),
                    ));
                }
            }
            Ok(out)
        };
        let p = rows('p', m)?;
        let q = rows('q', n)?;
        Ok(Model {
            k: k as usize,
            n_users: m as usize,
            n_items: n as usize,
            p,
            q,
            user_ids: None,
            item_ids: None,
        })
    }
}

//! Shared helpers for the text readers and writers: a streaming line reader over a reused
//! buffer, allocation-free field splitting, number parsing and float formatting.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use crate::{Error, Result};

/// Read buffer size for every reader (1 MiB).
pub(crate) const READ_BUF: usize = 1 << 20;

/// Opens `path` for buffered reading; also returns its size in bytes (0 when unknown), used
/// only to bound up-front allocations.
pub(crate) fn open(path: &Path) -> Result<(BufReader<File>, u64)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((BufReader::with_capacity(READ_BUF, file), size))
}

/// Reads lines one at a time into a reused buffer, counting them (1-based).
pub(crate) struct Lines<'p, R> {
    reader: R,
    buf: Vec<u8>,
    line: u64,
    path: &'p Path,
}

impl<'p, R: BufRead> Lines<'p, R> {
    /// Wraps `reader`; `path` names the input in errors.
    pub(crate) fn new(reader: R, path: &'p Path) -> Self {
        Lines {
            reader,
            buf: Vec::with_capacity(256),
            line: 0,
            path,
        }
    }

    /// The next line without its `\n` / `\r\n` ending, with its 1-based number; `None` at
    /// the end of the input.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &[u8])>> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(self.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
        }
        if end > 0 && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        Ok(Some((self.line, &self.buf[..end])))
    }

    /// Number of lines read so far (the number of the last line).
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// The path or name given for errors.
    pub(crate) fn path(&self) -> &'p Path {
        self.path
    }
}

/// Splits on runs of spaces and tabs, skipping empty fields; never allocates.
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b' ' || b == b'\t')
        .filter(|f| !f.is_empty())
}

/// Counts the fields [`fields`] yields (for error messages).
pub(crate) fn count_fields(line: &[u8]) -> usize {
    fields(line).count()
}

/// A field for an error message: lossy UTF-8, quoted, cut to 40 characters.
pub(crate) fn show(field: &[u8]) -> String {
    let s = String::from_utf8_lossy(field);
    if s.chars().count() > 40 {
        let cut: String = s.chars().take(40).collect();
        format!("\"{cut}…\"")
    } else {
        format!("\"{s}\"")
    }
}

/// Parses a non-negative decimal integer (ASCII digits only, optional leading `+`);
/// `None` on anything else or on overflow.
pub(crate) fn parse_u64(field: &[u8]) -> Option<u64> {
    let digits = field.strip_prefix(b"+").unwrap_or(field);
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// Parses a float (correctly rounded to `f32`). `Err` carries the message to report: not a
/// number, or not finite (NaN, ±Inf, or overflowing `f32`).
pub(crate) fn parse_f32(field: &[u8], what: &str) -> std::result::Result<f32, String> {
    match fast_float2::parse::<f32, _>(field) {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(format!("{what} {} is not finite", show(field))),
        Err(_) => Err(format!("{what} {} is not a number", show(field))),
    }
}

/// Writes `v` in the shortest form that reads back to the same `f32`: plain decimal for
/// moderate magnitudes, scientific notation otherwise.
pub(crate) fn write_f32<W: Write>(w: &mut W, v: f32) -> std::io::Result<()> {
    let a = v.abs();
    if a == 0.0 || (1e-4..1e9).contains(&a) {
        write!(w, "{v}")
    } else {
        write!(w, "{v:e}")
    }
}

/// Fills `buf` as far as the input allows; returns the number of bytes read.
pub(crate) fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"+17"), Some(17));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"1.0"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"+"), None);
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f32(b"1.5e3", "v"), Ok(1500.0));
        assert_eq!(parse_f32(b"-2", "v"), Ok(-2.0));
        assert!(parse_f32(b"nan", "v").unwrap_err().contains("not finite"));
        assert!(parse_f32(b"1e60", "v").unwrap_err().contains("not finite"));
        assert!(parse_f32(b"x1", "v").unwrap_err().contains("not a number"));
        assert!(parse_f32(b"1.0x", "v").is_err());
    }

    #[test]
    fn float_roundtrip() {
        for v in [
            0.1f32,
            -3.25e-7,
            1.0e20,
            123_456_790.0,
            f32::MAX,
            f32::MIN_POSITIVE,
            1e-45,
        ] {
            let mut s = Vec::new();
            write_f32(&mut s, v).unwrap();
            assert_eq!(parse_f32(&s, "v"), Ok(v), "{}", String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn split() {
        let f: Vec<&[u8]> = fields(b"  a\t\tb c ").collect();
        assert_eq!(f, vec![&b"a"[..], b"b", b"c"]);
    }
}

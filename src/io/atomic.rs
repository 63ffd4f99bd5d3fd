//! Atomic file replacement: write to a temporary file beside the target, then rename.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{Error, Result};

/// Write buffer size for every writer (1 MiB).
const WRITE_BUF: usize = 1 << 20;

/// Writes `path` atomically: `write` fills a buffered temporary file created in the same
/// directory, which is flushed, synced and then renamed over `path`. Readers of `path` see
/// either the old file or the complete new one, never a partial write. If `write` or any step
/// fails, the temporary file is removed and `path` is left untouched.
///
/// On Unix the new file gets the usual permissions of a freshly created file (`0o666` less
/// the umask), not the owner-only permissions of a temporary file.
pub fn write_atomically<F>(path: impl AsRef<Path>, write: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> Result<()>,
{
    let path = path.as_ref();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".wgsparse-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(path, e))?;
    // The temporary path deletes its file when dropped, so every early return cleans up.
    let (file, tmp_path) = tmp.into_parts();
    let mut w = BufWriter::with_capacity(WRITE_BUF, file);
    write(&mut w)?;
    w.flush().map_err(|e| Error::io(path, e))?;
    let file = w
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, e))?;
    drop(file);
    tmp_path
        .persist(path)
        .map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Maps a writer's I/O error to an [`Error::Io`] naming `path`.
pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

//! Host-memory limits shared by every system: a budget that each size following from an
//! input is checked against before anything large is allocated, and fallible allocation.
//!
//! Device limits live with the device ([`crate::gpu::GpuBuffer::check_fits`]); this module covers
//! the host side, so that no input file (a lying size line, a huge index) can abort the
//! process: an oversized request is an [`Error::HostMemory`] naming the size and what
//! needed it.

use crate::{Error, Result};

/// Environment variable that sets the host budget in MiB (overrides the default).
pub const HOST_BUDGET_ENV: &str = "WGSPARSE_HOST_MEMORY_MIB";

/// Budget when the available memory cannot be read (no `/proc/meminfo`): 8 GiB.
const FALLBACK_BUDGET: u64 = 8 << 30;

/// Bytes of host memory one request may take: `$WGSPARSE_HOST_MEMORY_MIB` MiB when set,
/// otherwise half of the memory the kernel reports available (`MemAvailable`), otherwise
/// 8 GiB. Half leaves room for the copies a conversion makes beside its input.
pub fn host_budget() -> u64 {
    if let Some(mib) = std::env::var(HOST_BUDGET_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return mib.saturating_mul(1 << 20);
    }
    available_bytes().map_or(FALLBACK_BUDGET, |b| b / 2)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The bytes of `len` values of `T`, or an [`Error::HostMemory`] naming `what` when that
/// overflows.
pub fn bytes_of<T>(what: &str, len: usize) -> Result<u64> {
    (len as u128)
        .checked_mul(std::mem::size_of::<T>() as u128)
        .and_then(|b| u64::try_from(b).ok())
        .ok_or_else(|| Error::HostMemory {
            what: format!("{what} ({len} values)"),
            bytes: u64::MAX,
            reason: "the size overflows 64 bits".into(),
        })
}

/// Fails with [`Error::HostMemory`] when `bytes` exceed [`host_budget`].
pub fn check_host(what: &str, bytes: u64) -> Result<()> {
    let budget = host_budget();
    if bytes > budget {
        return Err(Error::HostMemory {
            what: what.to_string(),
            bytes,
            reason: format!(
                "more than the host budget of {budget} bytes (half the available memory; \
                 {HOST_BUDGET_ENV} sets it)"
            ),
        });
    }
    Ok(())
}

/// [`check_host`] for `len` values of `T`.
pub fn check_host_len<T>(what: &str, len: usize) -> Result<()> {
    check_host(what, bytes_of::<T>(what, len)?)
}

/// An empty vector with room for `len` values, checked against the budget and reserved
/// fallibly: an allocation failure is an [`Error::HostMemory`], never an abort.
pub fn try_with_capacity<T>(what: &str, len: usize) -> Result<Vec<T>> {
    check_host_len::<T>(what, len)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| Error::HostMemory {
        what: what.to_string(),
        bytes: bytes_of::<T>(what, len).unwrap_or(u64::MAX),
        reason: format!("allocation failed ({e})"),
    })?;
    Ok(v)
}

/// `len` zero elements from the allocator's zeroed memory (fresh pages, no pass over them):
/// the pages are touched first by whoever writes them, e.g. threads filling their own
/// ranges. Checked like [`try_with_capacity`].
pub fn try_zeroed<T: bytemuck::Zeroable>(what: &str, len: usize) -> Result<Vec<T>> {
    check_host_len::<T>(what, len)?;
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| Error::HostMemory {
        what: what.to_string(),
        bytes: bytes_of::<T>(what, len).unwrap_or(u64::MAX),
        reason: "allocation failed".into(),
    })
}

/// `len` copies of `value`, allocated like [`try_with_capacity`].
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(what, len)?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_beyond_the_budget() {
        let e = try_vec::<u32>("row offsets", usize::MAX / 2, 0).unwrap_err();
        assert!(matches!(e, Error::HostMemory { .. }), "{e}");
        assert!(e.to_string().contains("row offsets"), "{e}");
        let e = bytes_of::<u64>("x", usize::MAX).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }

    #[test]
    fn allocates_within_the_budget() {
        let v = try_vec("small", 1000, 7u8).unwrap();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|&x| x == 7));
        assert!(host_budget() > 0);
    }
}

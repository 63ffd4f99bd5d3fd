//! Reused staging buffers written on several host threads and flushed in part (the staging
//! ring's use): a prefix copy leaves the rest of its destination alone, and what does not
//! fit is an error. The whole-buffer and piecewise flushes are in `gpu_runtime.rs`.

mod common;

use rand::{Rng, SeedableRng};
use wgsparse::gpu::{write_parallel, GpuBuffer, Upload};
use wgsparse::Error;

fn random_words(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

#[test]
fn prefix_flushes_of_parallel_fills_leave_the_tail() {
    let gpu = common::gpu();
    // 12 MiB: a fill on four threads is cut in three pieces of at most 4 MiB.
    let n = 3 << 20;
    let dst = GpuBuffer::<u32>::zeroed(gpu, "dst", n).unwrap();
    let up = Upload::for_buffer(gpu, "up", &dst).unwrap();
    let full = random_words(n, 1);
    up.fill(gpu, |w| write_parallel(w, &full, 4)).unwrap();
    up.flush_prefix(gpu, &dst, 4 * n as u64).unwrap();
    assert!(dst.read(gpu).unwrap() == full);
    // Shorter contents, on four threads and on one, at lengths off the pieces' grid: the
    // prefix is the new words, the tail still the old ones.
    let mut want = full;
    for (len, threads, seed) in [(2 << 20 | 3, 4, 2), ((1 << 20) + 5, 1, 3), (7, 4, 4)] {
        let short = random_words(len, seed);
        up.fill(gpu, |w| write_parallel(w, &short, threads))
            .unwrap();
        up.flush_prefix(gpu, &dst, 4 * len as u64).unwrap();
        want[..len].copy_from_slice(&short);
        let got = dst.read(gpu).unwrap();
        let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(wrong, 0, "{len} words on {threads} threads: {wrong} wrong");
    }
    // More than the staging buffer holds: refused by the fill, which then leaves nothing
    // to flush.
    let long = random_words(n + 1, 5);
    let err = up.fill(gpu, |w| write_parallel(w, &long, 4));
    assert!(matches!(err, Err(Error::Shape(_))), "{err:?}");
    assert!(!up.is_filled());
    assert!(up.flush_prefix(gpu, &dst, 4).is_err());
    // A prefix beyond the staging buffer or the destination (its padded size), or off the
    // 4-byte grid: a shape error, nothing queued; one that fits a smaller destination goes.
    up.fill(gpu, |w| write_parallel(w, &[7u32; 10], 1)).unwrap();
    let small = GpuBuffer::<u32>::zeroed(gpu, "small", 10).unwrap();
    for bytes in [up.bytes() + 4, 6] {
        let r = up.flush_prefix(gpu, &dst, bytes);
        assert!(matches!(r, Err(Error::Shape(_))), "{bytes} bytes: {r:?}");
    }
    let r = up.flush_prefix(gpu, &small, small.raw().size() + 4);
    assert!(matches!(r, Err(Error::Shape(_))), "{r:?}");
    up.flush_prefix(gpu, &small, 40).unwrap();
    assert_eq!(small.read(gpu).unwrap(), vec![7u32; 10]);
}

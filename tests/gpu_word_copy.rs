//! `gpu::WordCopy` (`runtime/copy_words`): a prefix of random words copied into a poisoned
//! buffer, the rest left alone, inside a batch beside other work; lengths within one
//! invocation per word and past the grid's stride; a copy longer than a buffer refused.

mod common;

use rand::{Rng, SeedableRng};
use wgsparse::gpu::{Batch, GpuBuffer, WordCopy};
use wgsparse::Error;

const POISON: u32 = 0x7fc0_dead;

#[test]
fn copies_the_prefix_and_nothing_else() {
    let gpu = common::gpu();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // 1,000,003 words stride four times over the 1,024 × 256 invocations.
    for (len, words) in [(1usize, 1usize), (300, 257), (1_000_010, 1_000_003)] {
        let data: Vec<u32> = (0..len).map(|_| rng.random()).collect();
        let src = GpuBuffer::upload(gpu, "copy.src", &data).unwrap();
        let dst = GpuBuffer::filled(gpu, "copy.dst", len, POISON).unwrap();
        let copy = WordCopy::new(gpu, &src, &dst, words).unwrap();
        let mut batch = Batch::new(gpu);
        copy.record(&mut batch).unwrap();
        batch.submit().unwrap();
        let got = dst.read(gpu).unwrap();
        assert_eq!(&got[..words], &data[..words], "len {len}, words {words}");
        assert!(got[words..].iter().all(|&w| w == POISON), "len {len}");
        // The source is unchanged.
        assert_eq!(src.read(gpu).unwrap(), data);
    }
}

#[test]
fn a_copy_past_either_buffer_is_refused() {
    let gpu = common::gpu();
    let a = GpuBuffer::<u32>::filled(gpu, "copy.a", 10, 1).unwrap();
    let b = GpuBuffer::<u32>::filled(gpu, "copy.b", 20, 2).unwrap();
    for (src, dst) in [(&a, &b), (&b, &a)] {
        match WordCopy::new(gpu, src, dst, 11) {
            Err(Error::Shape(m)) => assert!(m.contains("11 words"), "{m}"),
            Err(e) => panic!("wrong error {e}"),
            Ok(_) => panic!("a copy of 11 words between 10 and 20 was accepted"),
        }
    }
}

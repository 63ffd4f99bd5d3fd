//! `Batch::time_phases`: named phases, each compute pass timed by timestamps where the adapter
//! has them, replayed phases timed per copy, and no change to what the batch computes.

mod common;

use wgsparse::gpu::{Batch, GpuBuffer};

#[test]
fn phases_time_each_pass_and_change_no_results() {
    let gpu = common::gpu();
    let n4 = 128usize;
    let data: Vec<[f32; 4]> = (0..n4)
        .map(|i| {
            [
                i as f32,
                0.5 - i as f32,
                1.0 / (i + 1) as f32,
                -(i as f32).sqrt(),
            ]
        })
        .collect();
    let kernel = common::copy_kernel(gpu);
    let params = gpu.uniform("phases.params", &[n4 as u32, 64 * 4]);
    for phased in [true, false] {
        let a = GpuBuffer::upload(gpu, "phases.a", &data).unwrap();
        let [b, c, d] = ["phases.b", "phases.c", "phases.d"]
            .map(|l| GpuBuffer::<[f32; 4]>::filled(gpu, l, n4, [f32::NAN; 4]).unwrap());
        let step = |batch: &mut Batch, from: &GpuBuffer<[f32; 4]>, to: &GpuBuffer<[f32; 4]>| {
            let bg = kernel.bind(gpu, &[&params, from.raw(), to.raw()]).unwrap();
            batch.dispatch(&kernel, bg, [2, 1, 1]).unwrap();
        };
        let mut batch = Batch::new(gpu);
        if phased {
            batch.time_phases();
        }
        // "first": a → b; "second": b → c and c → d in one pass; then "again" replayed twice.
        batch.phase("first");
        step(&mut batch, &a, &b);
        batch.phase("second");
        step(&mut batch, &b, &c);
        step(&mut batch, &c, &d);
        let mark = batch.mark().unwrap();
        batch.phase("again");
        step(&mut batch, &d, &b);
        batch.replay(mark, 2).unwrap();
        assert_eq!(batch.dispatches(), 6);
        let (_, times) = batch.submit_nowait_phased().unwrap();
        gpu.wait().unwrap();
        for buf in [&b, &c, &d] {
            assert_eq!(buf.read(gpu).unwrap(), data, "phased {phased}");
        }
        match times {
            None => assert!(!(phased && gpu.caps.timestamps)),
            Some(t) => {
                assert!(phased && gpu.caps.timestamps);
                let passes = t.read(gpu).unwrap();
                let names: Vec<&str> = passes.iter().map(|p| p.name).collect();
                assert_eq!(names, ["first", "second", "again", "again", "again"]);
                assert_eq!(passes[0].start, 0.0);
                for p in &passes {
                    assert!(p.end >= p.start && p.end.is_finite(), "{passes:?}");
                }
            }
        }
    }
}

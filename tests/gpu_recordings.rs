//! `Batch::into_recording` and `Batch::append`: steps recorded once run again in later
//! batches, their gated regions following the flag's value at each run (what changes between
//! uses lives in buffers), phased or not.

mod common;

use wgsparse::gpu::{Batch, GpuBuffer};

#[test]
fn recordings_run_again_in_later_batches() {
    let gpu = common::gpu();
    let n4 = 200usize;
    let data: Vec<[f32; 4]> = (0..n4)
        .map(|i| [i as f32, -0.5 * i as f32, 1.0 / (i + 1) as f32, 3.0])
        .collect();
    let kernel = common::copy_kernel(gpu);
    let params = gpu.uniform("rec.params", &[n4 as u32, 64 * 4]);
    let src = GpuBuffer::upload(gpu, "rec.src", &data).unwrap();
    let nan = GpuBuffer::<[f32; 4]>::filled(gpu, "rec.nan", n4, [f32::NAN; 4]).unwrap();
    let dst = GpuBuffer::<[f32; 4]>::filled(gpu, "rec.dst", n4, [0.0; 4]).unwrap();
    // The flag at word 1 of a longer buffer (the gate binds the words up to it).
    let flag = GpuBuffer::<f32>::filled(gpu, "rec.flag", 1_000, 5.0).unwrap();
    // dst poisoned, then src → dst while flag[1] is 0.
    let mut batch = Batch::new(gpu);
    batch.time_phases();
    batch.phase("gated");
    batch.copy(nan.raw(), dst.raw(), 16 * n4 as u64);
    batch.begin_gate(&flag, 1).unwrap();
    let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()]).unwrap();
    batch.dispatch(&kernel, bg, [4, 1, 1]).unwrap();
    batch.end_gate().unwrap();
    let rec = batch.into_recording().unwrap();
    // The gate and the copy kernel.
    assert_eq!(rec.dispatches(), 2);
    for (value, phased, times) in [(0.0f32, false, 2), (1.0, true, 1), (0.0, true, 3)] {
        flag.write_at(gpu, 1, &[value]).unwrap();
        let mut batch = Batch::new(gpu);
        if phased {
            batch.time_phases();
        }
        batch.append(&rec, times).unwrap();
        assert_eq!(batch.dispatches(), 2 * times);
        let (_, phases) = batch.submit_nowait_phased().unwrap();
        gpu.wait().unwrap();
        let got = dst.read(gpu).unwrap();
        if value == 0.0 {
            assert_eq!(got, data, "flag {value}, {times} times");
        } else {
            assert!(got.iter().flatten().all(|v| v.is_nan()), "gated off");
        }
        match phases {
            Some(t) => {
                assert!(phased);
                let names: Vec<&str> = t.read(gpu).unwrap().iter().map(|p| p.name).collect();
                assert_eq!(names, vec!["gated"; times]);
            }
            None => assert!(!(phased && gpu.caps.timestamps)),
        }
    }
    // Only whole gated regions: not taken nor appended with one open.
    let mut batch = Batch::new(gpu);
    batch.begin_gate(&flag, 1).unwrap();
    assert!(batch.append(&rec, 1).is_err());
    assert!(batch.into_recording().is_err());
}

//! The runtime on a real adapter: buffers, limits, the shared WGSL library (reductions,
//! half, RNG) on both the feature and the fallback paths, and the roofline probe (the f32
//! atomics: `gpu_atomics.rs`).

mod common;

use rand::{Rng, SeedableRng};
use wgsparse::gpu::{shaders, Batch, Binding, GpuBuffer, KernelSpec};
use wgsparse::{Error, Gpu};

#[test]
fn buffers_round_trip_and_poison() {
    let gpu = common::gpu();
    let data: Vec<u32> = (0..1000).map(|i| i * 7 + 3).collect();
    let b = GpuBuffer::upload(gpu, "t", &data).unwrap();
    assert_eq!(b.read(gpu).unwrap(), data);
    b.fill(gpu, u32::MAX).unwrap();
    assert!(b.read(gpu).unwrap().iter().all(|&v| v == u32::MAX));
    let empty = GpuBuffer::<f32>::upload(gpu, "empty", &[]).unwrap();
    assert!(empty.read(gpu).unwrap().is_empty());
    assert!(matches!(b.write(gpu, &[1, 2]), Err(Error::Shape(_))));
}

#[test]
fn staged_copies_read_a_range_behind_earlier_work_and_write_at_patches_one() {
    let gpu = common::gpu();
    let data = common::random_values(3000, 41);
    let b = GpuBuffer::upload(gpu, "t", &data).unwrap();
    let staging = wgsparse::gpu::Staging::<f32>::new(gpu, "staging", 1000).unwrap();
    // A write queued before the copy is seen by it; one queued after it is not.
    let patch = common::random_values(200, 42);
    b.write_at(gpu, 600, &patch).unwrap();
    let copy = staging.copy_from(gpu, &b, 500..1500).unwrap();
    b.write_at(gpu, 500, &[f32::NAN; 100]).unwrap();
    gpu.queue.submit(std::iter::empty());
    let got = staging.collect(gpu, copy).unwrap();
    let mut want = data[500..1500].to_vec();
    want[100..300].copy_from_slice(&patch);
    assert_eq!(got, want);
    let all = b.read(gpu).unwrap();
    assert!(all[500..600].iter().all(|x| x.is_nan()));
    assert_eq!(all[600..800], patch[..]);
    assert_eq!(all[..500], data[..500]);
    assert_eq!(all[800..], data[800..]);
    // The staging buffer is reusable, and empty copies work.
    let copy = staging.copy_from(gpu, &b, 2000..2001).unwrap();
    assert_eq!(staging.collect(gpu, copy).unwrap(), vec![data[2000]]);
    let copy = staging.copy_from(gpu, &b, 7..7).unwrap();
    assert!(staging.collect(gpu, copy).unwrap().is_empty());
    // Out of range or beyond the staging buffer: a shape error, nothing queued.
    assert!(matches!(
        staging.copy_from(gpu, &b, 0..1001),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        staging.copy_from(gpu, &b, 2900..3001),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        b.write_at(gpu, 2999, &[1.0, 2.0]),
        Err(Error::Shape(_))
    ));
}

#[test]
fn uploads_reuse_one_staging_buffer_and_views_read_in_place() {
    // An iterating caller's transfers: new contents written through one reused staging buffer
    // each time, read back through one reused read-back buffer, viewed where they lie.
    let gpu = common::gpu();
    let dst = GpuBuffer::<f32>::zeroed(gpu, "dst", 2500).unwrap();
    let up = wgsparse::gpu::Upload::for_buffer(gpu, "up", &dst).unwrap();
    let down = wgsparse::gpu::Staging::<f32>::new(gpu, "down", 2500).unwrap();
    // A flush needs a successful fill first.
    assert!(up.flush(gpu, &dst).is_err());
    for seed in 0..3 {
        let data = common::random_values(2500, 50 + seed);
        up.fill(gpu, |mut w| {
            w.copy_from_slice(bytemuck::cast_slice(&data));
            Ok(())
        })
        .unwrap();
        up.flush(gpu, &dst).unwrap();
        // Ordered before the read-back's copy: no wait needed.
        let ready = down.wait(gpu, down.copy_from(gpu, &dst, 0..2500).unwrap());
        assert_eq!(*down.view(ready.unwrap()).unwrap(), data[..]);
    }
    // A failed fill leaves nothing to flush; the next fill goes through.
    let err = up.fill(gpu, |_| -> wgsparse::Result<()> {
        Err(Error::Option("no".into()))
    });
    assert!(err.is_err() && !up.is_filled());
    assert!(up.flush(gpu, &dst).is_err());
    let data = common::random_values(2500, 60);
    up.fill(gpu, |mut w| {
        w.copy_from_slice(bytemuck::cast_slice(&data));
        Ok(())
    })
    .unwrap();
    up.flush(gpu, &dst).unwrap();
    // A fetched copy dropped unread unmaps its buffer, which takes the next copy.
    drop(
        down.wait(gpu, down.copy_from(gpu, &dst, 0..10).unwrap())
            .unwrap(),
    );
    let copy = down.copy_from(gpu, &dst, 0..2500).unwrap();
    assert_eq!(down.collect(gpu, copy).unwrap(), data);
    assert!(up
        .flush(gpu, &GpuBuffer::<f32>::zeroed(gpu, "other", 10).unwrap())
        .is_err());
    // Pieces of one destination, each through a staging buffer of its own at its offset.
    let pieces = [0..1000, 1000..2496, 2496..2500];
    let ups: Vec<_> = pieces
        .iter()
        .map(|r| wgsparse::gpu::Upload::new(gpu, "piece", 4 * r.len() as u64).unwrap())
        .collect();
    let data = common::random_values(2500, 70);
    for (r, up) in pieces.iter().zip(&ups) {
        up.fill(gpu, |mut w| {
            w.copy_from_slice(bytemuck::cast_slice(&data[r.clone()]));
            Ok(())
        })
        .unwrap();
        up.flush_at(gpu, &dst, 4 * r.start as u64).unwrap();
    }
    let copy = down.copy_from(gpu, &dst, 0..2500).unwrap();
    assert_eq!(down.collect(gpu, copy).unwrap(), data);
    // Past the end or off the 4-byte grid: refused (filled, so the offset is why).
    for up in &ups[1..] {
        up.fill(gpu, |_| Ok(())).unwrap();
    }
    assert!(ups[1].flush_at(gpu, &dst, 4 * 1005).is_err());
    assert!(ups[2].flush_at(gpu, &dst, 2).is_err());
    ups[1].flush_at(gpu, &dst, 4 * 1004).unwrap();
    assert!(wgsparse::gpu::Upload::new(gpu, "odd", 6).is_err());
}

#[test]
fn oversized_buffer_is_a_clear_error() {
    let gpu = common::gpu();
    let too_many = (gpu.caps.max_buffer_bytes / 4 + 1) as usize;
    match GpuBuffer::<f32>::zeroed(gpu, "huge", too_many) {
        Err(Error::TooLarge { what, .. }) => assert!(what.contains("huge")),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a buffer beyond the largest buffer was accepted"),
    }
}

#[test]
fn binding_beyond_one_storage_binding_is_a_clear_error() {
    // 8 KiB bindings: a 16 KiB buffer may exist but not be bound whole; half of it may.
    let gpu = common::gpu_small_bindings();
    let src = GpuBuffer::<f32>::filled(gpu, "src", 4096, 1.0).unwrap();
    let dst = GpuBuffer::<f32>::zeroed(gpu, "dst", 1024).unwrap();
    let kernel = gpu
        .kernel(&KernelSpec {
            name: "runtime/copy",
            defines: vec![],
            constants: vec![],
            bindings: &[Binding::Uniform, Binding::Read, Binding::ReadWrite],
        })
        .unwrap();
    let params = gpu.uniform("params", &[256u32, 256, 0, 0]);
    match kernel.bind(gpu, &[&params, src.raw(), dst.raw()]) {
        Err(Error::TooLarge { what, .. }) => assert!(what.contains("binding 1"), "{what}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a 16 KiB binding was accepted with 8 KiB bindings"),
    }
    let half = wgpu::BufferBinding {
        buffer: src.raw(),
        offset: 8192,
        size: std::num::NonZeroU64::new(4096),
    };
    let ranges = [
        params.as_entire_buffer_binding(),
        half,
        dst.raw().as_entire_buffer_binding(),
    ];
    assert!(kernel.bind_ranges(gpu, &ranges).is_ok());
}

#[test]
fn indirect_dispatches_take_their_grid_from_the_buffer() {
    // runtime/copy with no grid stride: each invocation copies one vec4, so the copied
    // prefix shows the grid the arguments held (3 workgroups of 64), and a rewrite of the
    // arguments between submissions changes it (5).
    let gpu = common::gpu();
    let src = GpuBuffer::upload(gpu, "src", &common::random_values(4 * 1024, 5)).unwrap();
    let kernel = common::copy_kernel(gpu);
    let params = gpu.uniform("params", &[1024u32, 1 << 20, 0, 0]);
    let args = GpuBuffer::<u32>::zeroed_indirect(gpu, "args", 6).unwrap();
    let want = src.read(gpu).unwrap();
    for (slot, groups) in [(0usize, 3u32), (1, 5)] {
        let dst = GpuBuffer::<f32>::filled(gpu, "dst", 4 * 1024, f32::NAN).unwrap();
        let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()]).unwrap();
        let mut words = vec![0u32; 6];
        words[3 * slot..3 * slot + 3].copy_from_slice(&[groups, 1, 1]);
        args.write(gpu, &words).unwrap();
        let mut batch = Batch::new(gpu);
        batch.dispatch_indirect(&kernel, bg, &args, slot).unwrap();
        assert_eq!(batch.dispatches(), 1);
        batch.submit().unwrap();
        let got = dst.read(gpu).unwrap();
        let copied = (groups * 64 * 4) as usize;
        assert_eq!(&got[..copied], &want[..copied], "{groups} workgroups");
        assert!(
            got[copied..].iter().all(|v| v.is_nan()),
            "{groups} workgroups"
        );
    }
    let mut batch = Batch::new(gpu);
    let dst = GpuBuffer::<f32>::zeroed(gpu, "dst", 4 * 1024).unwrap();
    let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()]).unwrap();
    assert!(batch.dispatch_indirect(&kernel, bg, &args, 2).is_err());
}

fn run_reduce(gpu: &Gpu, lanes: u32, subgroup: bool) {
    let wg = 64u32;
    let n = wg as usize * 8;
    let x = common::random_values(n, lanes as u64);
    let kernel = gpu
        .kernel(&KernelSpec {
            name: "selftest/reduce",
            defines: if subgroup { vec!["SUBGROUP"] } else { vec![] },
            constants: vec![("WG", wg as f64), ("LANES", lanes as f64)],
            bindings: &[Binding::Read, Binding::ReadWrite],
        })
        .unwrap();
    let xb = GpuBuffer::upload(gpu, "x", &x).unwrap();
    let out = GpuBuffer::filled(gpu, "out", n, f32::NAN).unwrap();
    let mut batch = Batch::new(gpu);
    batch
        .dispatch(
            &kernel,
            kernel.bind(gpu, &[xb.raw(), out.raw()]).unwrap(),
            [8, 1, 1],
        )
        .unwrap();
    batch.submit().unwrap();
    let got = out.read(gpu).unwrap();
    for (i, g) in got.iter().enumerate() {
        let base = i / lanes as usize * lanes as usize;
        let want: f64 = x[base..base + lanes as usize]
            .iter()
            .map(|&v| v as f64)
            .sum();
        let mag: f64 = x[base..base + lanes as usize]
            .iter()
            .map(|&v| v.abs() as f64)
            .sum();
        assert!(
            (*g as f64 - want).abs() <= 8.0 * f32::EPSILON as f64 * mag,
            "lanes {lanes} subgroup {subgroup}: element {i} = {g}, want {want}"
        );
    }
}

#[test]
fn virtual_subgroup_sums_on_both_paths() {
    let gpu = common::gpu();
    for lanes in [1, 2, 4, 8, 16, 32] {
        run_reduce(gpu, lanes, false);
        if gpu.caps.shuffle_fits(lanes) {
            run_reduce(gpu, lanes, true);
        }
    }
}

#[test]
fn half_packing_and_rng_match_the_cpu() {
    let gpu = common::gpu();
    let n = 256usize;
    let x = common::random_values(2 * n, 5);
    let pairs: Vec<[f32; 2]> = x.chunks(2).map(|c| [c[0], c[1]]).collect();
    let kernel = gpu
        .kernel(&KernelSpec {
            name: "selftest/half_rng",
            defines: vec![],
            constants: vec![],
            bindings: &[
                Binding::Read,
                Binding::Read,
                Binding::ReadWrite,
                Binding::ReadWrite,
                Binding::ReadWrite,
                Binding::ReadWrite,
            ],
        })
        .unwrap();
    let pb = GpuBuffer::upload(gpu, "pairs", &pairs).unwrap();
    let halves = |p: [f32; 2]| (half::f16::from_f32(p[0]), half::f16::from_f32(p[1]));
    let host_words: Vec<u32> = pairs
        .iter()
        .map(|&p| {
            let (lo, hi) = halves(p);
            lo.to_bits() as u32 | (hi.to_bits() as u32) << 16
        })
        .collect();
    let hw = GpuBuffer::upload(gpu, "host_packed", &host_words).unwrap();
    let packed = GpuBuffer::<u32>::filled(gpu, "packed", n, 0xdead_beef).unwrap();
    let unpacked = GpuBuffer::<[f32; 2]>::filled(gpu, "unpacked", n, [f32::NAN; 2]).unwrap();
    let hashes = GpuBuffer::<u32>::filled(gpu, "hashes", n, 0).unwrap();
    let uniforms = GpuBuffer::<f32>::filled(gpu, "uniforms", n, f32::NAN).unwrap();
    let bg = kernel
        .bind(
            gpu,
            &[
                pb.raw(),
                hw.raw(),
                packed.raw(),
                unpacked.raw(),
                hashes.raw(),
                uniforms.raw(),
            ],
        )
        .unwrap();
    let mut batch = Batch::new(gpu);
    batch
        .dispatch(&kernel, bg, [(n / 64) as u32, 1, 1])
        .unwrap();
    batch.submit().unwrap();
    let (pk, up) = (packed.read(gpu).unwrap(), unpacked.read(gpu).unwrap());
    for i in 0..n {
        let (lo, hi) = halves(pairs[i]);
        assert_eq!(pk[i], host_words[i], "pair {i} packs differently");
        assert_eq!(
            up[i],
            [lo.to_f32(), hi.to_f32()],
            "pair {i} unpacks differently"
        );
    }
    let (hs, us) = (hashes.read(gpu).unwrap(), uniforms.read(gpu).unwrap());
    for i in 0..n {
        let h = shaders::pcg_hash(i as u32);
        assert_eq!(hs[i], h, "hash {i}");
        assert_eq!(us[i], (h >> 8) as f32 / 16_777_216.0, "uniform {i}");
    }
}

#[test]
fn roofline_probe_runs() {
    let gpu = common::gpu();
    // The read probe checks every invocation's sum itself (an error otherwise); the odd size
    // leaves invocations with unequal shares.
    for bytes in [4 << 20, (4 << 20) + 5 * 16] {
        let r = wgsparse::report::roofline::measure(gpu, bytes, 3, 16).unwrap();
        assert!(r.copy_gbps > 0.0 && r.copy_gbps.is_finite());
        assert!(r.read_gbps > 0.0 && r.read_gbps.is_finite());
        assert!(r.read_gbps_median <= r.read_gbps);
        assert!(r.read_bytes > bytes && r.read_bytes < bytes + bytes / 32);
        assert!(r.dispatch_us > 0.0);
    }
}

#[test]
fn fallback_device_has_no_optional_features_and_still_reduces() {
    let gpu = common::gpu_plain();
    assert!(!gpu.caps.subgroups && !gpu.caps.f32_atomics && !gpu.caps.timestamps);
    assert!(!gpu.caps.wg_f32_atomics);
    run_reduce(gpu, 8, false);
}

#[test]
fn checked_shader_mode_and_adopted_devices_run_kernels() {
    use wgsparse::sddmm::{cpu, Options, Plan};
    let s = wgsparse::gen::power_law(60, 50, 500, 1.1, 3).unwrap();
    let a = wgsparse::gen::dense_uniform(60, 20, 1);
    let b = wgsparse::gen::dense_uniform(50, 20, 2);
    let (want, mag) = cpu::sddmm(&s, &a, &b);
    // naga's bounds checks on (debug mode) …
    let checked = Gpu::new_with(&wgsparse::gpu::GpuOptions {
        checked_shaders: true,
        ..Default::default()
    })
    .unwrap();
    // … and a device the application created itself.
    let adopted = pollster::block_on(async {
        let instance = wgpu::Instance::default();
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions::default())
            .await
            .expect("an adapter");
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                required_limits: limits,
                ..Default::default()
            })
            .await
            .expect("a device");
        Gpu::from_device(&adapter, device, queue)
    });
    for gpu in [&checked, &adopted] {
        let plan = Plan::new(gpu, &s, 20, Options::default()).unwrap();
        let got = plan.run_host(gpu, &a, &b).unwrap();
        assert!(cpu::compare(&got, &want, &mag, 20).ok());
    }
}

#[test]
fn every_format_has_a_device_twin_that_round_trips() {
    use wgsparse::sparse::{GpuCoo, GpuCsc, GpuCsr, GpuCsrEll, GpuDcsr, GpuDense, GpuEll};
    let gpu = common::gpu();
    // Power-law rows with some empty rows, so DCSR and the hybrid have work to do.
    let csr = wgsparse::gen::power_law(300, 120, 2500, 1.2, 4).unwrap();
    assert_eq!(GpuCsr::upload(gpu, &csr).unwrap().read(gpu).unwrap(), csr);
    let coo = csr.to_coo();
    assert_eq!(GpuCoo::upload(gpu, &coo).unwrap().read(gpu).unwrap(), coo);
    let csc = csr.to_csc();
    assert_eq!(GpuCsc::upload(gpu, &csc).unwrap().read(gpu).unwrap(), csc);
    let ell = csr.to_ell().unwrap();
    assert_eq!(GpuEll::upload(gpu, &ell).unwrap().read(gpu).unwrap(), ell);
    let dcsr = csr.to_dcsr();
    assert_eq!(
        GpuDcsr::upload(gpu, &dcsr).unwrap().read(gpu).unwrap(),
        dcsr
    );
    let hybrid = csr.to_csr_ell(4).unwrap();
    let back = GpuCsrEll::upload(gpu, &hybrid).unwrap().read(gpu).unwrap();
    assert_eq!(back.to_csr(), csr);
    let dense = wgsparse::gen::dense_uniform(7, 13, 1);
    let gd = GpuDense::upload(gpu, &dense).unwrap();
    assert_eq!(gd.stride, 16);
    assert_eq!(gd.read(gpu).unwrap(), dense);
    for (multiple, stride) in [(1, 13), (4, 16), (8, 16)] {
        let gd = GpuDense::upload_with_multiple(gpu, &dense, multiple).unwrap();
        assert_eq!((gd.stride, gd.data.len()), (stride, 7 * stride));
        assert_eq!(gd.read(gpu).unwrap(), dense);
    }
}

#[test]
fn exclusive_scan_matches_the_cpu_at_every_level_count() {
    // 1 block, block edges, 2 levels, 3 levels; with subgroups and without.
    use wgsparse::gpu::ExclusiveScan;
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    for gpu in [common::gpu(), common::gpu_plain()] {
        for n in [0usize, 1, 5, 1023, 1024, 1025, 70_001, 1_100_003] {
            // Power-law counts (mostly small, a few large), sums well below 2³².
            let values: Vec<u32> = (0..n)
                .map(|_| (rng.random_range(0.02f64..1.0).powf(-1.5) as u32).min(3000))
                .collect();
            let mut want = Vec::with_capacity(n);
            let mut run = 0u32;
            for &v in &values {
                want.push(run);
                run += v;
            }
            let data = GpuBuffer::upload(gpu, "scan", &values).unwrap();
            let scan = ExclusiveScan::new(gpu, n).unwrap();
            let mut batch = Batch::new(gpu);
            scan.record(&mut batch, &data).unwrap();
            batch.submit().unwrap();
            let got = data.read(gpu).unwrap();
            if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                panic!("n = {n}: element {i} is {} want {}", got[i], want[i]);
            }
            // First pass only: the blocks' totals left to the reader.
            data.write(gpu, &values).unwrap();
            let mut batch = Batch::new(gpu);
            scan.record_blocks(&mut batch, &data).unwrap();
            batch.submit().unwrap();
            let totals = scan.totals().map(|o| o.read(gpu).unwrap());
            assert_eq!(totals.is_some(), n > ExclusiveScan::BLOCK, "n = {n}");
            let got = data.read(gpu).unwrap();
            // Offsets of every block: the exclusive sums of the totals.
            let offsets: Vec<u32> = totals.as_ref().map_or(vec![0], |t| {
                t.iter()
                    .scan(0u32, |run, &x| {
                        let o = *run;
                        *run += x;
                        Some(o)
                    })
                    .collect()
            });
            let at = |i: usize| got[i] + offsets[i / ExclusiveScan::BLOCK];
            if let Some(i) = (0..n).find(|&i| at(i) != want[i]) {
                panic!(
                    "first pass, n = {n}: element {i} is {} want {}",
                    at(i),
                    want[i]
                );
            }
        }
    }
}

#[test]
fn gated_dispatches_follow_the_device_flag() {
    // A gated region runs with its recorded grids while flag[index] is 0.0 on the device and
    // with empty grids otherwise; the flag may be written earlier in the same batch.
    let gpu = common::gpu();
    let n4 = 300usize;
    let data: Vec<[f32; 4]> = common::random_values(4 * n4, 3)
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let src = GpuBuffer::upload(gpu, "gate.src", &data).unwrap();
    let kernel = common::copy_kernel(gpu);
    let params = gpu.uniform("gate.params", &[n4 as u32, 64 * 5]);
    for (flag_value, runs) in [(0.0f32, true), (1.0, false), (f32::NAN, false)] {
        let flag = GpuBuffer::upload(gpu, "gate.flag", &[7.0, 7.0]).unwrap();
        let set = GpuBuffer::upload(gpu, "gate.set", &[7.0, flag_value]).unwrap();
        let dst = GpuBuffer::<[f32; 4]>::filled(gpu, "gate.dst", n4, [f32::NAN; 4]).unwrap();
        let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()]).unwrap();
        let mut batch = Batch::new(gpu);
        // The flag is set by the batch itself, before the region.
        batch.copy(set.raw(), flag.raw(), 8);
        batch.begin_gate(&flag, 1).unwrap();
        batch.dispatch(&kernel, bg, [5, 1, 1]).unwrap();
        batch.end_gate().unwrap();
        batch.submit().unwrap();
        let got = dst.read(gpu).unwrap();
        if runs {
            assert!(got.iter().zip(&data).all(|(a, b)| a == b));
        } else {
            assert!(got.iter().flatten().all(|v| v.is_nan()));
        }
    }
    // Replayed regions: each copy's gate reads the flag as the copy starts. Per pass: dst
    // poisoned, the gated copy src → dst, then the flag set to `after`. With after = 1 the
    // first pass copies and the replays stay gated (dst ends poisoned); with 0 every replay
    // copies again (dst ends equal to src).
    for (after, copied) in [(1.0f32, false), (0.0, true)] {
        let flag = GpuBuffer::upload(gpu, "gate.flag", &[0.0f32]).unwrap();
        let set = GpuBuffer::upload(gpu, "gate.set", &[after]).unwrap();
        let nan = GpuBuffer::<[f32; 4]>::filled(gpu, "gate.nan", n4, [f32::NAN; 4]).unwrap();
        let dst = GpuBuffer::<[f32; 4]>::filled(gpu, "gate.dst", n4, [0.0; 4]).unwrap();
        let bg = kernel.bind(gpu, &[&params, src.raw(), dst.raw()]).unwrap();
        let mut batch = Batch::new(gpu);
        let mark = batch.mark().unwrap();
        batch.copy(nan.raw(), dst.raw(), 16 * n4 as u64);
        batch.begin_gate(&flag, 0).unwrap();
        assert!(batch.mark().is_err());
        assert!(batch.replay(mark, 1).is_err());
        batch.dispatch(&kernel, bg, [5, 1, 1]).unwrap();
        batch.end_gate().unwrap();
        batch.copy(set.raw(), flag.raw(), 4);
        batch.replay(mark, 2).unwrap();
        // Gate and copy kernel, three times.
        assert_eq!(batch.dispatches(), 6);
        batch.submit().unwrap();
        let got = dst.read(gpu).unwrap();
        if copied {
            assert!(got.iter().zip(&data).all(|(a, b)| a == b));
        } else {
            assert!(got.iter().flatten().all(|v| v.is_nan()));
        }
    }
    // Misuse is an error, not a panic.
    let flag = GpuBuffer::upload(gpu, "gate.flag", &[0.0f32]).unwrap();
    let mut batch = Batch::new(gpu);
    assert!(batch.end_gate().is_err());
    assert!(batch.begin_gate(&flag, 1).is_err());
    batch.begin_gate(&flag, 0).unwrap();
    assert!(batch.begin_gate(&flag, 0).is_err());
    assert!(batch.submit().is_err());
}

/// The clock warm-up builds and runs its spin kernel (two short runs on a CPU device) and
/// reports the time it spent, well under the warm-up's ceiling.
#[test]
fn clock_warm_up_runs_the_spin_kernel_and_reports_its_time() {
    let gpu = common::gpu();
    let seconds = wgsparse::gpu::warm_clocks(gpu).unwrap();
    assert!(
        seconds > 0.0 && seconds < wgsparse::gpu::WARM_UP_MAX_SECONDS + 2.0,
        "{seconds}"
    );
}

/// The warm-up counts a device as cold (the longer least warm-up) before its first timed
/// workload and again once it has idled past `IDLE_SECONDS`, and as warm right after one.
#[test]
fn warm_up_is_cold_after_idle_and_warm_right_after_a_timed_workload() {
    use wgsparse::gpu::{timed_warm_report, GpuTime, IDLE_SECONDS};
    // A device of its own: other tests' timed work would warm the shared one.
    let gpu = wgsparse::Gpu::new().unwrap();
    let run = || Ok(GpuTime::wall(1e-4));
    let (_, first) = timed_warm_report(&gpu, 1, run).unwrap();
    assert!(first.cold, "{first:?}");
    let (_, next) = timed_warm_report(&gpu, 1, run).unwrap();
    assert!(!next.cold, "{next:?}");
    std::thread::sleep(std::time::Duration::from_secs_f64(IDLE_SECONDS + 0.1));
    let (_, idled) = timed_warm_report(&gpu, 1, run).unwrap();
    assert!(idled.cold, "{idled:?}");
}

/// `Batch::time_copies`: a batch of copy → dispatch → copy → dispatch → copy runs in order
/// (each step sees the one before) and is timed by timestamps where the adapter has them,
/// the leading and trailing copies inside the bracket; without it such a batch is timed by
/// the wall clock.
#[test]
fn timed_batches_bracket_copies_between_passes() {
    let gpu = common::gpu();
    let n4 = 256usize;
    let data: Vec<[f32; 4]> = common::random_values(4 * n4, 11)
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let kernel = common::copy_kernel(gpu);
    let params = gpu.uniform("timed.params", &[n4 as u32, 64 * 4]);
    let bytes = 16 * n4 as u64;
    for time_copies in [true, false] {
        let src = GpuBuffer::upload(gpu, "timed.src", &data).unwrap();
        let [a, b, c, d] = ["timed.a", "timed.b", "timed.c", "timed.d"]
            .map(|l| GpuBuffer::<[f32; 4]>::filled(gpu, l, n4, [f32::NAN; 4]).unwrap());
        let mut batch = Batch::new(gpu);
        if time_copies {
            batch.time_copies();
        }
        batch.copy(src.raw(), a.raw(), bytes);
        let ab = kernel.bind(gpu, &[&params, a.raw(), b.raw()]).unwrap();
        batch.dispatch(&kernel, ab, [4, 1, 1]).unwrap();
        batch.copy(b.raw(), c.raw(), bytes);
        let cd = kernel.bind(gpu, &[&params, c.raw(), d.raw()]).unwrap();
        batch.dispatch(&kernel, cd, [4, 1, 1]).unwrap();
        batch.copy(d.raw(), a.raw(), bytes);
        let t = batch.submit_timed().unwrap();
        assert!(t.seconds.is_finite() && t.seconds >= 0.0, "{t:?}");
        assert_eq!(
            t.from_timestamps,
            time_copies && gpu.caps.timestamps,
            "{t:?}"
        );
        for buf in [&a, &b, &c, &d] {
            assert_eq!(buf.read(gpu).unwrap(), data);
        }
    }
}

//! SDDMM the way an iterative app (ALS, LDA, sparse attention) uses it: plan once on the
//! sparsity pattern, keep A and B on the device, refresh B every iteration, and compute
//! P = S ∘ (A·Bᵀ) again — then check P against the f64 CPU twin.
//!
//! Run with `cargo run --release --example sddmm` (no data files needed; on a machine with
//! no GPU, Mesa's software Vulkan device, lavapipe, is enough).

use wgsparse::gpu::GpuBuffer;
use wgsparse::sddmm::{cpu, Options, Plan};
use wgsparse::sparse::{Dense, GpuDense};
use wgsparse::{gen, Gpu};

/// Writes host matrix `m` into the device matrix `dst` in place, padding rows to its stride.
fn write_dense(gpu: &Gpu, dst: &GpuDense, m: &Dense) -> wgsparse::Result<()> {
    let mut padded = vec![0f32; dst.nrows * dst.stride];
    for i in 0..m.nrows {
        padded[i * dst.stride..i * dst.stride + m.ncols].copy_from_slice(m.row(i));
    }
    dst.data.write(gpu, &padded)
}

fn main() -> wgsparse::Result<()> {
    // 1. A device: the best Vulkan/Metal/DX12 adapter (discrete > integrated > CPU).
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            // The error already says how to install a driver (e.g. Mesa's lavapipe).
            eprintln!("sddmm example: cannot open a GPU: {e}");
            eprintln!("(WGPU_BACKEND and WGPU_ADAPTER_NAME choose among installed adapters)");
            std::process::exit(1);
        }
    };
    println!("adapter: {} ({})", gpu.caps.adapter_name, gpu.caps.backend);

    // 2. Built-in data: a power-law S (skewed rows and columns, like ratings or text) and
    //    dense factors A (M×K) and B (N×K).
    let (m, n, nnz, k) = (20_000, 15_000, 400_000, 64);
    let s = gen::power_law(m, n, nnz, 1.1, 7)?;
    let a_host = gen::dense_uniform(m, k, 1);

    // 3. The plan: validates S, picks the variant and tile sizes (model), tiles S and uploads
    //    the tiling — once. Every run below reuses it.
    let t0 = std::time::Instant::now();
    let plan = Plan::new(&gpu, &s, k, Options::default())?;
    println!(
        "S {m}×{n}, {} nnz, K = {k}; plan in {:.0} ms",
        s.nnz(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    println!("config: {:?}", plan.config);

    // 4. Device operands, uploaded once; the output holds one value per nonzero of S.
    let a = GpuDense::upload(&gpu, &a_host)?;
    let mut b_host = gen::dense_uniform(n, k, 2);
    let b = GpuDense::upload(&gpu, &b_host)?;
    let out = GpuBuffer::<f32>::zeroed(&gpu, "P", s.nnz())?;

    // 5. The iterative loop: a new B each iteration is written in place (no new buffers),
    //    then the SDDMM runs on device-resident data. An app would update A/B from P here.
    for iter in 0..3u64 {
        b_host = gen::dense_uniform(n, k, 100 + iter);
        write_dense(&gpu, &b, &b_host)?;
        let t = std::time::Instant::now();
        plan.run(&gpu, &a, &b, &out)?;
        println!(
            "iteration {iter}: {:.2} ms host-observed",
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    // 6. Read P back (CSR order of S) and check it against the f64 twin.
    let p = out.read(&gpu)?;
    let (want, mag) = cpu::sddmm(&s, &a_host, &b_host);
    let cmp = cpu::compare(&p, &want, &mag, k);
    println!(
        "check: max relative error {:.2e} (tolerance {:.2e}) -> {}",
        cmp.max_rel_error,
        cmp.tolerance,
        if cmp.ok() { "ok" } else { "FAILED" }
    );
    if !cmp.ok() {
        return Err(wgsparse::Error::Check {
            kernel: plan.config.variant.name().into(),
            message: format!("first bad nonzero {:?}", cmp.first_bad),
        });
    }

    // 7. GPU time: median of 5 timed submissions (timestamp queries when the adapter has
    //    them, else wall clock), and the paper's 2·K·nnz flop count.
    let t = plan.time(&gpu, &a, &b, &out, 5)?;
    println!(
        "{}: {:.3} ms ({}), {:.2} GFLOP/s",
        plan.config.variant.name(),
        t.ms(),
        t.source(),
        plan.flops() / t.seconds / 1e9
    );
    Ok(())
}

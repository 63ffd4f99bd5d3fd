//! Sparse DNN inference, the GraphChallenge network: RadiX-Net-like layers of the champion's
//! recipe (32 nonzeros of 1/16 per row at (r + o_k) mod N, rows and columns permuted), inputs
//! that are random binary rows (or the first Fashion-MNIST images when a decompressed IDX file
//! is given), all layers on the GPU in one submission, and the categories checked against the
//! f64 CPU twin, on both GPU paths.
//!
//! Run with `cargo run --release --example graphchallenge [-- train-images-idx3-ubyte]` (no
//! data files needed; on a machine with no GPU, Mesa's software Vulkan device is enough).

use wgsparse::spdnn::{self, cpu, data, Approach, Options, Plan};
use wgsparse::Gpu;

fn main() -> wgsparse::Result<()> {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("graphchallenge example: cannot open a GPU: {e}");
            std::process::exit(1);
        }
    };
    println!("adapter: {} ({})", gpu.caps.adapter_name, gpu.caps.backend);
    let (n, layers, rows) = (1024, 24, 1000);
    let bias = spdnn::challenge_bias(n);
    let net = data::generated_network(n, layers, bias, 2026)?;
    let y0 = match std::env::args().nth(1) {
        Some(idx) => data::idx_inputs(&wgsparse::io::read_idx_images(idx)?, n, Some(rows), 96)?,
        None => data::random_inputs(rows, n, 0.3, 2027)?,
    };
    println!(
        "N = {n}, L = {layers}, bias {bias}, {} input rows with {} nonzeros",
        y0.nrows,
        y0.nnz()
    );
    let want = cpu::categories(&cpu::infer(&net, &y0), n);
    for approach in [Approach::SlicedEll, Approach::DenseRows] {
        let options = Options {
            approach,
            ..Options::default()
        };
        let plan = Plan::new(&gpu, &net, &y0, &options)?;
        let time = plan.run(&gpu)?;
        let got = plan.categories(&gpu)?;
        println!(
            "{:>10}: {:.2} ms ({}), {:.3e} edges/s, {} rows survive, categories {}",
            approach.name(),
            time.ms(),
            time.source(),
            spdnn::edges_per_second(&net, y0.nrows, time.seconds),
            got.len(),
            if got == want {
                "match the CPU twin"
            } else {
                "DIFFER from the CPU twin"
            }
        );
        if got != want {
            std::process::exit(1);
        }
    }
    Ok(())
}

//! `wgsparse fused --export`: X, the full pattern's operands and w as raw arrays, for
//! `benches/peers/fused_peer.py`.

use std::path::Path;

use serde_json::json;

use wgsparse::fused::bench::{Input, Operands};
use wgsparse::fused::{Options, Pattern, Plan};
use wgsparse::{io, Error, Gpu, Result};

/// Writes `data` as raw little-endian f32.
pub(crate) fn write_f32(path: &Path, data: &[f32]) -> Result<()> {
    std::fs::write(path, bytemuck::cast_slice(data)).map_err(|e| Error::io(path, e))
}

/// Writes X as raw arrays into `dir`: CSR (`wgsparse gen --raw` layout) or `dense.f32`
/// row-major with `meta.json` (`nrows`, `ncols`, `dense`).
pub(crate) fn export_matrix(dir: &Path, input: &Input) -> Result<()> {
    let (m, n) = input.matrix().shape();
    match input {
        Input::Sparse(s) => io::write_csr_binary(dir, s)?,
        Input::Dense(d) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            write_f32(&dir.join("dense.f32"), &d.data)?;
            let meta = json!({ "nrows": m, "ncols": n, "dense": true });
            let p = dir.join("meta.json");
            std::fs::write(&p, meta.to_string()).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

/// Writes X and the full pattern's operands and w for the peer script.
pub(super) fn export(
    gpu: &Gpu,
    dir: &Path,
    input: &Input,
    base: &Options,
    seed: u64,
) -> Result<()> {
    export_matrix(dir, input)?;
    let x = input.matrix();
    let (m, n) = x.shape();
    let ops = Operands::random(gpu, m, n, Pattern::Full, seed)?;
    let plan = Plan::new(gpu, x, base)?;
    plan.run(gpu, &ops.op(), &ops.w)?;
    let (y, v, z) = ops.host_vectors();
    write_f32(&dir.join("y.f32"), y)?;
    write_f32(&dir.join("v.f32"), v)?;
    write_f32(&dir.join("z.f32"), z)?;
    write_f32(&dir.join("w_wgsparse.f32"), &ops.w.read(gpu)?)?;
    let meta = json!({
        "alpha": ops.alpha, "beta": ops.beta, "pattern": "full",
        "kind": if matches!(input, Input::Dense(_)) { "dense" } else { "sparse" },
        "adapter": gpu.caps.adapter_name,
    });
    let p = dir.join("operands.json");
    std::fs::write(&p, meta.to_string()).map_err(|e| Error::io(&p, e))
}

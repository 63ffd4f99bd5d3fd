//! `wgsparse spdnn --export`: the network and inputs as raw CSR folders for the peer scripts.

use serde_json::json;

use wgsparse::spdnn;
use wgsparse::{io, Result};

/// Writes `net` and `y0` (input rows `first ..`) as raw CSR folders with a `meta.json` for
/// the peer scripts.
pub(super) fn export(
    dir: &std::path::Path,
    net: &spdnn::Network,
    y0: &wgsparse::sparse::Csr,
    first: usize,
) -> Result<()> {
    io::write_csr_binary(dir.join("inputs"), y0)?;
    for (k, w) in net.layers.iter().enumerate() {
        io::write_csr_binary(dir.join(format!("l{}", k + 1)), w)?;
    }
    let meta = json!({
        "format": "wgsparse-spdnn",
        "neurons": net.n, "layers": net.layers.len(), "rows": y0.nrows, "first_row": first,
        "bias": net.bias, "edges": net.edges(),
    });
    let path = dir.join("meta.json");
    io::write_atomically(&path, |w| {
        use std::io::Write;
        w.write_all(meta.to_string().as_bytes())
            .map_err(|e| wgsparse::Error::io(&path, e))
    })
}

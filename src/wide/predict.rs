//! Scoring data with a saved model on the GPU (no trainer needed).

use crate::gpu::{loop_cap, Batch, Gpu, GpuBuffer};
use crate::sparse::Csr;
use crate::wide::engine::{DeviceChunks, Kernels, Schedule};
use crate::wide::plan::{split_rows, Chunks, FeatureOrder};
use crate::wide::ModelSpec;
use crate::{Error, Result};

/// Invocations per workgroup of the prediction kernel: `chunk` samples × `lanes` each.
pub const PREDICT_WG: u32 = 256;

/// Lanes per sample of the prediction kernel by default (32 samples per workgroup).
pub const PREDICT_LANES: u32 = 8;

/// Loop iterations one invocation of the prediction kernel runs at worst, its sample of
/// `longest` features walked by `lanes` lanes: each edge's turn and its Aggregate (LR none,
/// FM a loop over its k factors: `params_per_feature − 1`; a model's own WGSL is assumed
/// alike), the Accum loops, their reduction and the Loss.
pub fn iterations(longest: usize, lanes: u32, spec: &ModelSpec) -> u64 {
    let per_edge = spec.params_per_feature.max(1) as u64;
    let accums = spec.accums as u64;
    let reduce = u64::from(lanes.max(1).trailing_zeros());
    (longest as u64).div_ceil(u64::from(lanes.max(1))) * per_edge
        + accums * (3 + reduce)
        + spec.params_per_feature as u64
        + 8
}

/// (samples per workgroup, lanes per sample) for data whose longest sample has `longest`
/// features, on a device with loop cap `cap`: 32 × [`PREDICT_LANES`], or under a cap more
/// lanes per sample (fewer samples per workgroup) until an invocation's loops fit its
/// budget; `None` when not even one sample per workgroup over [`PREDICT_WG`] lanes fits.
pub fn shape(cap: Option<u32>, longest: usize, spec: &ModelSpec) -> Option<(usize, u32)> {
    let mut lanes = PREDICT_LANES;
    while lanes <= PREDICT_WG {
        if loop_cap::fits(cap, iterations(longest, lanes, spec)) {
            return Some(((PREDICT_WG / lanes) as usize, lanes));
        }
        lanes *= 2;
    }
    None
}

/// ŷ of every row of `x` under `model` (whose ALA functions `spec` gives), on the GPU; data
/// beyond one storage binding goes in parts.
/// Fails with [`Error::Shape`] when `x` has more columns than the model has features or the
/// spec's sizes differ from the model's. On a device with a loop cap a long sample takes
/// more lanes ([`shape`]); one too long for a whole workgroup is refused ([`Error::Option`],
/// naming the cap) rather than scored short.
pub fn predict(
    gpu: &Gpu,
    spec: &ModelSpec,
    model: &crate::wide::WideModel,
    x: &Csr,
) -> Result<Vec<f32>> {
    spec.check()?;
    // FM files written before the squares' Accums were merged into one record 2k + 1 of
    // them; the parameters are laid out the same.
    let fm_before_merge = spec.name == model.name
        && spec.name.starts_with("fm")
        && spec.params_per_feature > 1
        && spec.accums == spec.params_per_feature + 1
        && model.accums == 2 * spec.params_per_feature - 1;
    if spec.params_per_feature != model.params_per_feature
        || (spec.accums != model.accums && !fm_before_merge)
    {
        return Err(Error::Shape(format!(
            "model {} has {} parameters per feature and {} Accums, the spec {} and {}",
            model.name,
            model.params_per_feature,
            model.accums,
            spec.params_per_feature,
            spec.accums
        )));
    }
    if x.ncols > model.n_features {
        return Err(Error::Shape(format!(
            "data has {} feature columns, the model {}",
            x.ncols, model.n_features
        )));
    }
    let longest = (0..x.nrows)
        .map(|r| (x.row_ptr[r + 1] - x.row_ptr[r]) as usize)
        .max()
        .unwrap_or(0);
    let (chunk, lanes) = shape(gpu.caps.loop_cap, longest, spec).ok_or_else(|| {
        loop_cap::over_budget(
            &gpu.caps,
            &format!(
                "wide predict (a sample of {longest} features, {} parameters each, over at \
                 most {PREDICT_WG} lanes)",
                spec.params_per_feature
            ),
            iterations(longest, PREDICT_WG, spec),
        )
    })?;
    let order = FeatureOrder::identity(model.n_features)?;
    let one_hot = x.values.iter().all(|&v| v == 1.0);
    // Identity order: no frequency ranking to cache by.
    let kernels = Kernels::new(
        gpu,
        spec,
        chunk,
        lanes,
        (0, 0),
        (one_hot, one_hot),
        &crate::wide::Options::default(),
    )?;
    let bias_index = model.n_features * model.params_per_feature;
    let params = GpuBuffer::upload(gpu, "wide.params", &model.params)?;
    let unused = GpuBuffer::<f32>::zeroed(gpu, "wide.unused", 4)?;
    let ranges = split_rows(x, chunk, gpu.caps.max_storage_binding_bytes)?;
    let mut scores = Vec::with_capacity(x.nrows);
    // Parts of whole chunks that each fit one binding, one after the other.
    for r in &ranges {
        let band;
        let part = if ranges.len() == 1 {
            x
        } else {
            band = x.row_band(r.clone());
            &band
        };
        let c = Chunks::build(part, &vec![1.0; part.nrows], &order, chunk)?;
        let data = DeviceChunks::upload(gpu, &c, true, one_hot, 32)?;
        let config = gpu.uniform("wide.predict.config", &data.config(bias_index, 0.0, 1));
        let sched = Schedule::new(gpu, "wide.predict.sched", c.n_chunks, c.n_chunks)?;
        let ids: Vec<u32> = (0..c.n_chunks as u32).collect();
        sched.write(gpu, &ids, None)?;
        let mut batch = Batch::new(gpu);
        let bg = kernels.predict.bind_ranges(
            gpu,
            &[
                config.as_entire_buffer_binding(),
                sched.entry(0),
                data.meta.raw().as_entire_buffer_binding(),
                data.sedge.raw().as_entire_buffer_binding(),
                data.fedge.raw().as_entire_buffer_binding(),
                params.raw().as_entire_buffer_binding(),
                unused.raw().as_entire_buffer_binding(),
                data.out.raw().as_entire_buffer_binding(),
            ],
        )?;
        batch.dispatch(&kernels.predict, bg, gpu.grid(c.n_chunks as u32)?)?;
        batch.submit()?;
        scores.extend(data.out.read(gpu)?.into_iter().step_by(2));
    }
    Ok(scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wide::Model;

    #[test]
    fn long_samples_take_more_lanes_under_a_cap() {
        let lr = Model::parse("lr", 0).unwrap().spec().unwrap();
        let fm = Model::parse("fm", 8).unwrap().spec().unwrap();
        // No cap: always 32 samples of 8 lanes.
        assert_eq!(shape(None, 10_000_000, &fm), Some((32, 8)));
        let cap = Some(65_535);
        assert_eq!(shape(cap, 1_000, &lr), Some((32, 8)));
        // 600,000 features of one parameter: 8 lanes loop 75,000 times each; 32 lanes fit.
        let (chunk, lanes) = shape(cap, 600_000, &lr).unwrap();
        assert!(lanes > 8 && chunk as u32 * lanes == PREDICT_WG);
        assert!(iterations(600_000, lanes, &lr) <= 32_767);
        assert!(iterations(600_000, lanes / 2, &lr) > 32_767);
        // FM's parameters per edge count too; too long for one workgroup: refused.
        assert!(shape(cap, 600_000, &fm).unwrap().1 > lanes);
        assert_eq!(shape(cap, 100_000_000, &lr), None);
    }
}

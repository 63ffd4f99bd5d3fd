//! Scoring data with a saved model on the GPU (no trainer needed).

use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::sparse::Csr;
use crate::wide::engine::{DeviceChunks, Kernels, Schedule};
use crate::wide::plan::{split_rows, Chunks, FeatureOrder};
use crate::wide::ModelSpec;
use crate::{Error, Result};

/// ŷ of every row of `x` under `model` (whose ALA functions `spec` gives), on the GPU; data
/// beyond one storage binding goes in parts.
/// Fails with [`Error::Shape`] when `x` has more columns than the model has features or the
/// spec's sizes differ from the model's.
pub fn predict(
    gpu: &Gpu,
    spec: &ModelSpec,
    model: &crate::wide::WideModel,
    x: &Csr,
) -> Result<Vec<f32>> {
    spec.check()?;
    if spec.params_per_feature != model.params_per_feature || spec.accums != model.accums {
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
    let chunk = 32;
    let order = FeatureOrder::identity(model.n_features);
    let one_hot = x.values.iter().all(|&v| v == 1.0);
    // Identity order: no frequency ranking to cache by.
    let kernels = Kernels::new(
        gpu,
        spec,
        chunk,
        8,
        0,
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
        let data = DeviceChunks::upload(gpu, &c, true, one_hot)?;
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

//! Seeded generators: power-law sparse matrices, RadiX-Net-like layers, planted ratings, Zipf CTR data.
//!
//! Every generator is deterministic given its seed: the same arguments give the same output on
//! any number of threads. Large outputs are filled in parallel, each block of rows (or values)
//! drawing from its own random stream derived from the seed.

mod ctr;
mod dense;
mod draws;
mod engine;
mod power_law;
mod radix;
mod ratings;

pub use ctr::{zipf_ctr, CtrData, CtrModel};
pub use dense::dense_uniform;
pub use power_law::{power_law, power_law_skewed};
pub use radix::radix_net_layer;
pub use ratings::{
    planted_ratings, planted_ratings_with_noise, PlantedRatings, RatingSet, RATING_NOISE,
};

//! Shared autotuning machinery: the on-disk cache of tuned configurations every system's
//! `auto` reads and writes ([`cache`]).

pub mod cache;

pub use cache::TuneCache;

//! Shared autotuning machinery: the on-disk cache of tuned configurations every system's
//! `auto` reads and writes ([`cache`]), and the interleaved final round that decides between
//! the fastest candidates of a screening pass ([`finals`]).

pub mod cache;
pub mod finals;

pub use cache::TuneCache;
pub use finals::Finalists;

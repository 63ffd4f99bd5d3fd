//! Measurement records: roofline probes and figures in real units.

pub mod demo;
pub mod plot;
pub mod roofline;
pub mod scatter;

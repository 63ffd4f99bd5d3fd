//! Measurement records: roofline probes and figures in real units.

pub mod roofline;

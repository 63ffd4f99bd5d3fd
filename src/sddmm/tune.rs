//! Sweeps and autotuning for SDDMM (filled in below).

//! CPU reference (being written).

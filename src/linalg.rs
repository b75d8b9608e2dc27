//! Small dense host algebra in f64 (being written).

//! The tests that need no GPU, one binary with a module per topic: the shape of the code
//! (`layout`, `rooms`), the shaders validated by naga (`shaders`), the neutral mixture math
//! (`gmm_math`), model files (`model_file`) and the agreement scores (`metrics_information`).

#[path = "../gpu/common/mod.rs"]
mod common;

mod gmm_math;
mod layout;
mod metrics_information;
mod model_file;
mod rooms;
mod shaders;

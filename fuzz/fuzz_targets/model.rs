//! The model-file parser on arbitrary text: a model is either refused or valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgpu_unsupervised::model_file::Model;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(model) = Model::from_json_str(&String::from_utf8_lossy(bytes)) {
        // What loads must save and load again as the same model.
        let again = Model::from_json_str(&model.to_json_string()).expect("a saved model loads");
        assert_eq!(again.kind(), model.kind());
    }
});

//! `--adapter` and `info --all`: choosing the GPU adapter by number or name.

use crate::common::{case, json_line, ok, usage, Fixture};

#[test]
fn info_all_lists_every_adapter_numbered_best_first() {
    let f = Fixture::new();
    let list = json_line(&f.run("info --all --json"));
    let adapters = list["adapters"].as_array().expect("an adapters array");
    assert!(!adapters.is_empty(), "{list}");
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"], i, "{list}");
        for key in [
            "name",
            "backend",
            "device_type",
            "max_storage_buffer_binding_size",
        ] {
            assert!(a.get(key).is_some(), "{key} missing from {a}");
        }
    }
    // The first listed is the one `info` opens by default.
    let default = json_line(&f.run("info --json"));
    assert_eq!(adapters[0]["name"], default["name"], "{list} vs {default}");
    let text = ok(&f.run("info --all"));
    assert!(text.contains("0: "), "{text}");
    assert!(text.contains("the default"), "{text}");
}

#[test]
fn adapter_by_number_or_name_is_the_one_used() {
    let mut f = Fixture::new();
    f.blobs("x", 200, 3, 3, 4);
    let first = json_line(&f.run("info --all --json"))["adapters"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    // A part of the name, in another case, selects it too.
    let word = first.split_whitespace().next().unwrap().to_uppercase();
    for selector in ["0".to_string(), word.clone()] {
        let info = json_line(&f.run(&format!("info --json --adapter {selector}")));
        assert_eq!(info["name"], first.as_str(), "--adapter {selector}");
        // A global option: accepted before the command too, and by every command.
        let out = f.run(&format!(
            "--adapter {selector} kmeans --input {{x}} --k 3 --seed 1 --json"
        ));
        assert_eq!(
            json_line(&out)["adapter"],
            first.as_str(),
            "--adapter {selector}"
        );
    }
}

#[test]
fn unknown_adapters_and_bad_selectors_are_refused() {
    let mut f = Fixture::new();
    f.blobs("x", 50, 2, 2, 1);
    for args in ["--adapter nothing-like-it info", "--adapter 99 info"] {
        let error = crate::common::fails(&f.run(args), 2);
        assert!(!error.contains("Install a Vulkan driver"), "{error}");
    }
    f.check(&[
        // No adapter matches while there are adapters: the selector is wrong (exit 2), the
        // message names the adapters seen and how to list them, and gives no driver advice.
        case(
            "kmeans --input {x} --k 2 --adapter no-such-gpu-anywhere",
            2,
            &["no-such-gpu-anywhere", "adapters seen", "info --all"],
        ),
        case(
            "info --adapter 99",
            2,
            &["no adapter number 99", "info --all"],
        ),
        case("info --all --adapter 99", 2, &["no adapter number 99"]),
        // A malformed selector is an invalid argument (exit 2), found before the GPU.
        case("info --adapter cuda:0", 2, &["unknown backend", "cuda"]),
        case("info --adapter= ", 2, &["empty selector"]),
        usage("info --all --ceilings", &["--ceilings"]),
    ]);
}

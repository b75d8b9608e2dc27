//! `bench`: kernels and fits timed against the measured ceilings, as JSON lines or a table.

use serde_json::Value;

use crate::common::{case, ok, usage, Case, Fixture};

const KEYS: [&str; 22] = [
    "impl",
    "kind",
    "kernel",
    "n",
    "d",
    "k",
    "iterations",
    "iterations_requested",
    "seconds",
    "seconds_per_iteration",
    "flops",
    "bytes",
    "gflops",
    "gbps",
    "peak_gflops",
    "peak_gbps",
    "efficiency",
    "bound",
    "adapter",
    "timing",
    "data",
    "detail",
];

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn bench_kernels_json_lines_hold_the_roofline() {
    let f = Fixture::new();
    let out = ok(&f.run(
        "bench --kernel assign --kernel centroid-update --kernel gmm-estep --covariance diag \
         --shape 3000,12,40 --shape 2000,5,3 --repeats 1 --json",
    ));
    let all = lines(&out);
    // The measurements, then the autotuner's trials of this run (the tests keep no tuning
    // cache, so every choice is timed here).
    let (rows, trials): (Vec<Value>, Vec<Value>) =
        all.into_iter().partition(|r| r["kind"] != "tuning_trial");
    assert_eq!(rows.len(), 6, "{out}");
    assert!(!trials.is_empty(), "{out}");
    for t in &trials {
        assert!(num(t, "seconds") > 0.0, "{t}");
        assert!(t["family"].as_str().unwrap().contains('['), "{t}");
        assert!(
            t["variant"].as_str().is_some() && t["class"].is_array(),
            "{t}"
        );
    }
    // One chosen candidate per family and shape class, and it is the fastest.
    let mut keys: Vec<String> = trials
        .iter()
        .map(|t| format!("{} {}", t["family"], t["class"]))
        .collect();
    keys.dedup();
    for key in &keys {
        let of: Vec<&Value> = trials
            .iter()
            .filter(|t| &format!("{} {}", t["family"], t["class"]) == key)
            .collect();
        let chosen: Vec<&&Value> = of.iter().filter(|t| t["chosen"] == true).collect();
        assert_eq!(chosen.len(), 1, "{key}: {of:?}");
        let fastest = of
            .iter()
            .map(|t| num(t, "seconds"))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(num(chosen[0], "seconds"), fastest, "{key}");
    }
    for (row, (kernel, n)) in rows.iter().zip([
        ("assign", 3000),
        ("assign", 2000),
        ("centroid-update", 3000),
        ("centroid-update", 2000),
        ("gmm-estep", 3000),
        ("gmm-estep", 2000),
    ]) {
        let mut keys: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        keys.sort_unstable();
        let mut expected = KEYS;
        expected.sort_unstable();
        assert_eq!(keys, expected, "{row}");
        assert_eq!(row["impl"], "wgpu-unsupervised");
        assert_eq!(row["kind"], "kernel");
        assert_eq!(row["kernel"], kernel);
        assert_eq!(row["n"], n);
        let (secs, flops, bytes) = (num(row, "seconds"), num(row, "flops"), num(row, "bytes"));
        assert!(secs > 0.0 && flops > 0.0 && bytes > 0.0, "{row}");
        // The rates and the efficiency follow from the other fields.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-30);
        assert!(close(num(row, "gflops"), flops / secs / 1e9), "{row}");
        assert!(close(num(row, "gbps"), bytes / secs / 1e9), "{row}");
        let compute = flops / (num(row, "peak_gflops") * 1e9);
        let memory = bytes / (num(row, "peak_gbps") * 1e9);
        assert!(
            close(num(row, "efficiency"), compute.max(memory) / secs),
            "{row}"
        );
        let bound = if compute >= memory {
            "compute"
        } else {
            "memory"
        };
        assert_eq!(row["bound"], bound);
        assert!(!row["adapter"].as_str().unwrap().is_empty());
        assert_eq!(row["data"], "blobs");
    }
    // The assignment's cost model: 2·n·d·k FLOPs over one read of the rows.
    assert_eq!(num(&rows[0], "flops"), 2.0 * 3000.0 * 12.0 * 40.0);
    assert_eq!(num(&rows[0], "bytes"), 4.0 * 3000.0 * 12.0);
    // Whichever variant the autotuner picked on this adapter.
    assert!(rows[0]["detail"].as_str().unwrap().contains("assign_"));
}

#[test]
fn bench_fit_on_an_input_with_its_profile_and_the_table() {
    let mut f = Fixture::new();
    f.blobs("x", 600, 6, 3, 4);
    let out = ok(&f.run(
        "bench --fit kmeans --fit gmm-full --input {x} --k 3 --iterations 2 --pca 4 \
         --profile --json",
    ));
    let rows = lines(&out);
    let fits: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "fit").collect();
    assert_eq!(fits.len(), 2, "{out}");
    assert_eq!(fits[0]["kernel"], "kmeans");
    assert_eq!(
        (fits[0]["n"].as_u64(), fits[0]["d"].as_u64()),
        (Some(600), Some(6))
    );
    // The iterations done (K-Means stops when no label changes) and the cost of those.
    assert_eq!(fits[0]["iterations_requested"], 2);
    let done = num(fits[0], "iterations");
    assert!((1.0..=2.0).contains(&done), "{}", fits[0]);
    assert_eq!(num(fits[0], "flops"), done * 2.0 * 600.0 * 6.0 * 3.0);
    assert_eq!(
        num(fits[0], "seconds_per_iteration"),
        num(fits[0], "seconds") / done
    );
    // EM with tolerance 0 does every iteration.
    assert_eq!(fits[1]["iterations"], 2);
    // The busy share: the profiled run's kernel time (its profile lines) over its wall time.
    for fit in &fits {
        let gpu = num(fit, "gpu_seconds");
        let lines: f64 = rows
            .iter()
            .filter(|r| r["kind"] == "profile" && r["fit"] == fit["kernel"])
            .map(|r| num(r, "seconds"))
            .sum();
        assert!((gpu - lines).abs() <= 1e-9 * gpu.max(1e-12), "{fit}");
        let busy = num(fit, "busy");
        assert!(busy > 0.0 && busy <= 1.0, "{fit}");
        assert!(["timestamps", "wall-clock"].contains(&fit["busy_timing"].as_str().unwrap()));
    }
    // The upload alone and the fit from the device copy, for data that fit the device.
    for fit in &fits {
        assert!(num(fit, "upload_seconds") > 0.0, "{fit}");
        assert!(num(fit, "resident_seconds") > 0.0, "{fit}");
    }
    assert_eq!(fits[0]["data"], "x");
    // --pca projects the data of the mixtures only.
    assert_eq!(fits[1]["kernel"], "gmm-full");
    assert_eq!(fits[1]["d"], 4);
    assert_eq!(fits[1]["data"], "x (PCA-4)");
    let profile: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "profile").collect();
    assert!(profile.iter().any(|r| r["fit"] == "kmeans"
        && r["entry"]
            .as_str()
            .unwrap()
            .starts_with("assign_nearest_centroid")));
    assert!(profile
        .iter()
        .all(|r| num(r, "seconds") >= 0.0 && r["calls"].as_u64() > Some(0)));

    let table = ok(&f.run("bench --kernel covariance --shape 500,9,0 --repeats 1"));
    // The tests' environment keeps no tuning cache (`common::command`).
    for word in [
        "adapter:",
        "ceilings:",
        "tuning cache: off",
        "GFLOP/s",
        "covariance",
        "eff.",
        "s/it",
        "busy",
    ] {
        assert!(table.contains(word), "{word}: {table}");
    }
}

#[test]
fn bench_refuses_bad_arguments() {
    let f = Fixture::new();
    const CASES: &[Case] = &[
        usage("bench --kernel nope", &["nope", "assign"]),
        usage("bench --fit nope", &["nope", "kmeans"]),
        usage("bench --shape 10,2", &["N,D,K"]),
        usage("bench --shape 0,2,3", &["N,D,K"]),
        usage("bench --shape 10,2,3 --input {iris}", &["--input"]),
        usage("bench --kernel assign --repeats 0", &["0"]),
        usage("bench --fit kmeans --iterations 0", &["0"]),
        case(
            "bench --kernel assign --shape 1152921504606846976,4,3",
            2,
            &["host memory"],
        ),
        case("bench --input {dir}/missing.npy", 2, &["missing.npy"]),
        case(
            "bench --kernel assign --input {iris} --k 151 --repeats 1",
            2,
            &["151"],
        ),
    ];
    f.check(CASES);
}

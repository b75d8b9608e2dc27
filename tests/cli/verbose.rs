//! `--verbose`: the library's per-iteration events on stderr, stdout unchanged. (The progress
//! bar needs stderr to be a terminal, which it never is here: these runs show none.)

use crate::common::{json_line, ok, stderr, stdout, Fixture};

#[test]
fn verbose_prints_each_iteration_on_stderr_and_leaves_stdout_alone() {
    let mut f = Fixture::new();
    f.blobs("x", 300, 3, 3, 5);
    let quiet = json_line(&f.run("kmeans --input {x} --k 3 --seed 4 --json"));
    let out = f.run("kmeans --input {x} --k 3 --seed 4 --json --verbose");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    let loud: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(loud["inertia"], quiet["inertia"]);
    assert_eq!(loud["n_iter"], quiet["n_iter"]);
    let err = stderr(&out);
    let iterations = err
        .lines()
        .filter(|l| l.contains("K-Means iteration"))
        .count();
    assert_eq!(
        iterations as u64,
        quiet["n_iter"].as_u64().unwrap(),
        "{err}"
    );
    assert!(err.contains("inertia=") && err.contains("shift="), "{err}");
    assert!(err.contains("K-Means fit done"), "{err}");

    // -v before the command, the human report, EM events.
    let out = f.run("-v gmm --input {x} --k 2 --seed 1");
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("log-likelihood"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("EM iteration") && err.contains("lower_bound="),
        "{err}"
    );

    let out = f.run("pca --input {x} --components 2 --solver power --verbose");
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("power iteration"), "{}", stderr(&out));

    // Without --verbose, nothing on stderr.
    ok(&f.run("gmm --input {x} --k 2 --seed 1"));
}

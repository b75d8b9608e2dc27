#!/usr/bin/env python3
"""Summary table of results.jsonl files (ours from `bench --json`, the peers from peers.py).

    summarize.py results.jsonl [more.jsonl ...] [--markdown]

One row per measurement: impl, device, kind, kernel, shape, iterations (done, and /asked
when fewer were done), seconds, seconds per iteration, GFLOP/s, GB/s, efficiency (roofline
bound time / measured time), GPU-busy share (ours: the fit's kernels' GPU time over its
wall time, from a profiled run; torch: CUDA-event time of the loop over the host-to-host
time) and bound, and for each peer row "ours/peer": our time over the peer's for the same
kind, kernel, n, d and k (below 1: ours is faster). Iterative fits (K-Means, EM) are
compared **per iteration**: K-Means stops when no label changes, on our side and on
scikit-learn's, so the counts can differ; the kit asks torch for the count ours did.

The header gives our adapter and ceilings (and how they were timed), the peers' ceilings,
the commit the kit was built from, and the GPU test suite's result. Lines that are not
measurements (info, ceilings, tests, profile, other text) only feed the header. Standard
library only. A second table holds our fits from data already on the device (and the upload
alone) against the PyTorch loop's device-only time.
"""

import json
import sys

OURS = "wgpu-unsupervised"
ITERATIVE = ("kmeans", "gmm-diag", "gmm-full", "gmm-tied", "gmm-spherical")


def read(paths):
    rows, info = [], []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if obj.get("kind") in ("kernel", "fit") and obj.get("seconds"):
                    obj.setdefault("impl", OURS)
                    rows.append(obj)
                elif obj.get("kind") in ("info", "ceilings", "tests", "tuning", "tuning_trial"):
                    info.append(obj)
    return rows, info


def key(r):
    detail = r.get("detail") if r["kind"] == "kernel" else None
    return (r["kind"], r["kernel"], str(detail or ""), r.get("n"), r.get("d"), r.get("k"))


def per_iteration(r):
    """Seconds per iteration done (the whole time for one-shot work)."""
    if r["kernel"] in ITERATIVE and r.get("iterations"):
        return r["seconds"] / r["iterations"]
    return r["seconds"]


def ratio(ours, peer):
    """Our time over the peer's, per iteration for iterative fits; None without ours."""
    if ours is None:
        return None
    return per_iteration(ours) / per_iteration(peer)


def busy(r):
    """The GPU-busy share: ours from its profiled run, torch from its CUDA-event time."""
    if r.get("busy") is not None:
        return r["busy"]
    if r.get("seconds_device") and r.get("device") == "cuda":
        return r["seconds_device"] / r["seconds"]
    return None


def blocked(r):
    """Ours: the share of the profiled fit's wall time the host sat waiting on the device, and
    readbacks per iteration (the design reads back at most once an iteration)."""
    host, b = r.get("host"), busy(r)
    if not host or not r.get("gpu_seconds") or not b:
        return ""
    wall = r["gpu_seconds"] / b
    per_it = host["readbacks"] / max(r.get("iterations") or 1, 1)
    return f"{100 * host['wait_seconds'] / wall:.0f}% / {per_it:.2g}"


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def iterations(r):
    done, asked = r.get("iterations"), r.get("iterations_requested")
    if done is None:
        return ""
    return f"{done}/{asked}" if asked and asked != done else str(done)


def table(rows):
    best_ours = {}
    for r in rows:
        if r["impl"] == OURS:
            k = key(r)
            if k not in best_ours or per_iteration(r) < per_iteration(best_ours[k]):
                best_ours[k] = r
    order = {"kernel": 0, "fit": 1}
    rows = sorted(rows, key=lambda r: (order.get(r["kind"], 2),) + key(r)[1:3]
                  + (r.get("n") or 0, r.get("d") or 0, r.get("k") or 0, r["impl"] != OURS,
                     r["impl"]))
    header = ["impl", "device", "kind", "kernel", "n x d", "k", "it", "seconds", "s/it",
              "GFLOP/s", "GB/s", "eff.", "busy", "blocked / rb/it", "bound", "ours/peer"]
    out = []
    for r in rows:
        rel = None if r["impl"] == OURS else ratio(best_ours.get(key(r)), r)
        detail = str(r.get("detail") or "") if r["kind"] == "kernel" else ""
        if len(detail) > 32:
            detail = detail[:31] + "…"
        kernel = r["kernel"] + (f" ({detail})" if detail else "")
        b = busy(r)
        out.append([
            r["impl"], str(r.get("device") or ""), r["kind"],
            kernel, f"{r.get('n')} x {r.get('d')}", str(r.get("k", "")),
            iterations(r), fmt(r["seconds"], ".4g"),
            fmt(per_iteration(r), ".4g") if r["kernel"] in ITERATIVE else "",
            fmt(r.get("gflops"), ".1f"), fmt(r.get("gbps"), ".1f"),
            fmt(r.get("efficiency"), ".3f"), "" if b is None else f"{100 * b:.0f}%",
            blocked(r), str(r.get("bound", "")), fmt(rel, ".3g"),
        ])
    return header, out


def resident_table(rows):
    """Ours from data already on the device (`resident_seconds`, with the upload alone beside
    it) against the PyTorch loop's CUDA-event time of the same fit (`seconds_device`, its
    loop without the upload): what a caller whose data live on the GPU waits for."""
    torch = {key(r): r for r in rows
             if r["impl"] == "torch" and r.get("device") == "cuda" and r.get("seconds_device")}
    header = ["fit", "n x d", "k", "it", "upload s", "ours resident s", "torch device s",
              "ours/torch"]
    out = []
    for r in rows:
        if r["impl"] != OURS or r.get("resident_seconds") is None:
            continue
        peer = torch.get(key(r))
        rel = r["resident_seconds"] / peer["seconds_device"] if peer else None
        out.append([
            r["kernel"], f"{r.get('n')} x {r.get('d')}", str(r.get("k", "")), iterations(r),
            fmt(r.get("upload_seconds"), ".4g"), fmt(r["resident_seconds"], ".4g"),
            fmt(peer["seconds_device"] if peer else None, ".4g"), fmt(rel, ".3g"),
        ])
    return header, out


def render(header, body, markdown):
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    line = lambda row: "  ".join(c.rjust(w) if i >= 4 else c.ljust(w)  # noqa: E731
                                 for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])


def preamble(rows, info):
    """The header lines: commit, tests, our adapter and ceilings, the peers' ceilings."""
    lines = []
    trials = {}
    for i in info:
        if i["kind"] == "tuning_trial":
            trials.setdefault((i.get("family", "?"), str(i.get("class"))), []).append(i)
    info = [i for i in info if i["kind"] != "tuning_trial"]
    commits = sorted({r["commit"] for r in rows + info if r.get("commit")})
    if commits:
        lines.append("commit: " + ", ".join(commits))
    for i in info:
        if i["kind"] == "tuning":
            lines.append(f"autotuner: {i.get('family', '?')} at class {i.get('class')}: "
                         f"{i.get('variant', '?')}")
        elif i["kind"] == "tests":
            failures = i.get("failures") or []
            lines.append(
                f"GPU tests ({i.get('suite', 'gpu')}): {i.get('status', '?')}, "
                f"{i.get('passed', '?')} passed, {i.get('failed', '?')} failed, "
                f"{i.get('ignored', 0)} ignored in {fmt(i.get('seconds'), '.0f')} s"
                + (f"; failed: {', '.join(failures)}" if failures else ""))
        else:
            ceil = (f", ceilings {i['peak_gflops']:.1f} GFLOP/s, {i['peak_gbps']:.1f} GB/s"
                    f" ({i.get('ceilings_timing', 'timing not recorded')})"
                    if "peak_gflops" in i else "")
            lines.append(f"ours ({i['kind']}): {i.get('name', '?')} [{i.get('backend', '?')}, "
                         f"{i.get('device_type', '?')}]{ceil}")
    # Every candidate the autotuner timed, per family and shape class (* the one it chose).
    for (family, cls), ts in trials.items():
        times = ", ".join(f"{t.get('variant', '?')} {1e3 * (t.get('seconds') or 0):.3f} ms"
                          + ("*" if t.get("chosen") else "") for t in ts)
        lines.append(f"autotuner trials: {family.split(' [')[0]} at class {cls}: {times}")
    peers = {}
    for r in rows:
        if r["impl"] != OURS:
            peers.setdefault((r["impl"], r.get("adapter"), r.get("device"), r.get("threads")),
                             []).append(r)
    for (impl, adapter, device, threads), rs in peers.items():
        gf = sorted(r.get("peak_gflops") or 0 for r in rs)
        gb = sorted(r.get("peak_gbps") or 0 for r in rs)
        span = lambda v: fmt(v[0], ".1f") + ("" if v[0] == v[-1] else "-" + fmt(v[-1], ".1f"))  # noqa: E731
        lines.append(f"{impl}: {adapter} ({device or '?'}"
                     f"{f', {threads} threads' if threads else ''}),"
                     f" ceilings {span(gf)} GFLOP/s, {span(gb)} GB/s")
    return lines


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if not paths or any(a.startswith("-") for a in paths):
        print(__doc__.strip(), file=sys.stderr)
        return 64
    rows, info = read(paths)
    for line in preamble(rows, info):
        print(line)
    if not rows:
        print("no measurements in " + ", ".join(paths))
        return 1
    header, body = table(rows)
    print(render(header, body, markdown))
    print("it: iterations done (/asked when fewer). ours/peer: our time over the peer's at "
          "the same kernel and shape, per iteration for K-Means and EM (< 1: ours faster). "
          "eff.: roofline bound time over measured time, against the ceilings of the device "
          "it ran on. busy: GPU time over wall time of the fit. blocked / rb/it (ours): the "
          "share of that wall time the host waited on the device, and readbacks per "
          "iteration.")
    header, body = resident_table(rows)
    if body:
        print()
        print(render(header, body, markdown))
        print("resident: our fit from data already on the device, the upload timed alone "
              "beside it; torch device: the PyTorch loop's CUDA-event time, its upload left "
              "out.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

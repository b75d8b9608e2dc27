#!/usr/bin/env python3
"""Summary table of results.jsonl files (ours from `bench --json`, the peers from peers.py).

    summarize.py results.jsonl [more.jsonl ...] [--markdown]

One row per measurement: impl, device, kind, kernel, shape, iterations, seconds, GFLOP/s,
GB/s, efficiency (roofline bound time / measured time) and bound, and for each peer row
"ours/peer": our seconds over the peer's for the same kind, kernel, n, d and k (below 1:
ours is faster). When the iteration counts differ (scikit-learn stops K-Means early once
the labels no longer change) the ratio is per iteration and marked "*". Lines that are not
measurements (info, ceilings, profile, other text) only feed the header. Standard library
only.
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
                elif obj.get("kind") in ("info", "ceilings"):
                    info.append(obj)
    return rows, info


def key(r):
    detail = r.get("detail") if r["kind"] == "kernel" else None
    return (r["kind"], r["kernel"], str(detail or ""), r.get("n"), r.get("d"), r.get("k"))


def ratio(ours, peer):
    """(ours seconds / peer seconds, per-iteration flag) or (None, False)."""
    if ours is None:
        return None, False
    io, ip = ours.get("iterations") or 0, peer.get("iterations") or 0
    if peer["kernel"] in ITERATIVE and io and ip and io != ip:
        return (ours["seconds"] / io) / (peer["seconds"] / ip), True
    return ours["seconds"] / peer["seconds"], False


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def table(rows):
    best_ours = {}
    for r in rows:
        if r["impl"] == OURS:
            k = key(r)
            if k not in best_ours or r["seconds"] < best_ours[k]["seconds"]:
                best_ours[k] = r
    order = {"kernel": 0, "fit": 1}
    rows = sorted(rows, key=lambda r: (order.get(r["kind"], 2),) + key(r)[1:3]
                  + (r.get("n") or 0, r.get("d") or 0, r.get("k") or 0, r["impl"] != OURS,
                     r["impl"]))
    header = ["impl", "device", "kind", "kernel", "n x d", "k", "it", "seconds", "GFLOP/s",
              "GB/s", "eff.", "bound", "ours/peer"]
    out = []
    for r in rows:
        rel, per_it = (None, False) if r["impl"] == OURS else ratio(best_ours.get(key(r)), r)
        detail = str(r.get("detail") or "") if r["kind"] == "kernel" else ""
        if len(detail) > 32:
            detail = detail[:31] + "…"
        kernel = r["kernel"] + (f" ({detail})" if detail else "")
        out.append([
            r["impl"], str(r.get("device") or ""), r["kind"],
            kernel, f"{r.get('n')} x {r.get('d')}", str(r.get("k", "")),
            str(r.get("iterations", "")), fmt(r["seconds"], ".4g"), fmt(r.get("gflops"), ".1f"),
            fmt(r.get("gbps"), ".1f"), fmt(r.get("efficiency"), ".3f"), str(r.get("bound", "")),
            (fmt(rel, ".3g") + ("*" if per_it else "")) if rel is not None else "",
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


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if not paths or any(a.startswith("-") for a in paths):
        print(__doc__.strip(), file=sys.stderr)
        return 64
    rows, info = read(paths)
    for i in info:
        ceil = (f", ceilings {i['peak_gflops']:.1f} GFLOP/s, {i['peak_gbps']:.1f} GB/s"
                if "peak_gflops" in i else "")
        print(f"ours ({i['kind']}): {i.get('name', '?')} [{i.get('backend', '?')}, "
              f"{i.get('device_type', '?')}]{ceil}")
    peers = {}
    for r in rows:
        if r["impl"] != OURS:
            peers.setdefault((r["impl"], r.get("adapter"), r.get("device"), r.get("threads")),
                             []).append(r)
    for (impl, adapter, device, threads), rs in peers.items():
        gf = sorted(r.get("peak_gflops") or 0 for r in rs)
        gb = sorted(r.get("peak_gbps") or 0 for r in rs)
        span = lambda v: fmt(v[0], ".1f") + ("" if v[0] == v[-1] else "-" + fmt(v[-1], ".1f"))  # noqa: E731
        print(f"{impl}: {adapter} ({device or '?'}{f', {threads} threads' if threads else ''}),"
              f" ceilings {span(gf)} GFLOP/s, {span(gb)} GB/s")
    if not rows:
        print("no measurements in " + ", ".join(paths))
        return 1
    header, body = table(rows)
    print(render(header, body, markdown))
    print("ours/peer: our seconds over the peer's at the same kernel and shape (< 1: ours "
          "faster; * per iteration, the iteration counts differ). eff.: roofline bound time "
          "over measured time, against the ceilings of the device it ran on.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

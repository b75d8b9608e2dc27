# Writes /tmp/big.npy: 8M x 128 f32 (4 GB) in 16 Gaussian blobs, a piece at a time
# (numpy memory map), for the streaming benchmark in BENCHMARKS.md.
import numpy as np, sys
n, d, k = 8_000_000, 128, 16
rng = np.random.default_rng(11)
centers = rng.uniform(-10, 10, size=(k, d)).astype(np.float32)
out = np.lib.format.open_memmap('/tmp/big.npy', mode='w+', dtype='<f4', shape=(n, d))
step = 500_000
for s in range(0, n, step):
    m = min(step, n - s)
    x = rng.standard_normal((m, d), dtype=np.float32) * 2.0
    x += centers[np.arange(s, s + m) % k]
    out[s:s+m] = x
out.flush()
print("ok")

//! The host twins of the neighbour queries (`shaders/neighbors/knn.wgsl`, `range.wgsl`),
//! which CPU-like adapters run instead ([`nearest_neighbors`](super::nearest_neighbors),
//! [`within_radius`](super::within_radius)).

use super::csr::Csr;

/// The host twin of `knn_update`: each row's `k` nearest among the rows (row-major, `d`
/// features), ordered by (squared distance, index), the distance summed in feature order as
/// the kernels' fma chain. llvmpipe computes WGSL's `fma` as a multiply then an add (the
/// unit test finds its bits so), and so does this loop: on llvmpipe the same lists and the
/// same bits as the kernels.
///
/// For CPU-like adapters, whose "device" is these same cores: llvmpipe runs both sides of
/// every branch (the insertion into the list at every pair, ~10x the pair's distance) and
/// loads each value lane by lane. Here each query walks the rows in the order of their first
/// feature, outwards from its own place, the nearer side first, and stops on a side once the
/// first feature's squared gap alone exceeds its list's last distance: exact, since the
/// distance is at least that term (the gap is the same rounded difference, rounding is
/// monotone and the other terms are not negative), and the list under the order (distance,
/// index) does not depend on the order the rows come in. In few dimensions a query meets a
/// few hundred rows instead of N. Queries are split over the available threads; each list
/// depends on its row only, so the split changes nothing.
pub(crate) fn nearest_neighbors_host(rows: &[f32], d: usize, k: usize) -> (Vec<u32>, Vec<f32>) {
    let n = rows.len() / d;
    let mut index = vec![u32::MAX; n * k];
    let mut dist = vec![f32::MAX; n * k];
    if n == 0 || k == 0 {
        return (index, dist);
    }
    let (by_first, place) = by_first_feature(rows, d);
    let (by_first, place) = (&by_first[..], &place[..]);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per_thread = n.div_ceil(threads.min(n));
    std::thread::scope(|s| {
        let lists = index
            .chunks_mut(per_thread * k)
            .zip(dist.chunks_mut(per_thread * k));
        for (part, (index, dist)) in lists.enumerate() {
            s.spawn(move || {
                let lists = index.chunks_mut(k).zip(dist.chunks_mut(k));
                for (i, (index, dist)) in (part * per_thread..).zip(lists) {
                    let q = &rows[i * d..(i + 1) * d];
                    let gap = |p: usize| {
                        let t = q[0] - rows[by_first[p] as usize * d];
                        t * t
                    };
                    // Rows by_first[down..up] have been met; the next ones go in batches
                    // (the bound checked against the list as it was before the batch: no
                    // tighter, so no row that could enter is skipped).
                    let (mut down, mut up) = (place[i], place[i]);
                    loop {
                        let last = dist[k - 1];
                        let open = |g: f32| index[k - 1] == u32::MAX || g <= last;
                        let mut batch = [0u32; NEIGHBOUR_BATCH];
                        let mut m = 0;
                        while m < NEIGHBOUR_BATCH {
                            let up_gap = (up < n).then(|| gap(up)).filter(|&g| open(g));
                            let down_gap = (down > 0).then(|| gap(down - 1)).filter(|&g| open(g));
                            batch[m] = match (down_gap, up_gap) {
                                (None, None) => break,
                                (Some(gd), Some(gu)) if gd < gu => {
                                    down -= 1;
                                    by_first[down]
                                }
                                (Some(_), None) => {
                                    down -= 1;
                                    by_first[down]
                                }
                                _ => {
                                    up += 1;
                                    by_first[up - 1]
                                }
                            };
                            m += 1;
                        }
                        if m == 0 {
                            break;
                        }
                        let d2 = batch_sq_distances(q, rows, &batch[..m]);
                        for (&j, &v) in batch[..m].iter().zip(&d2) {
                            insert_neighbour(index, dist, j, v);
                        }
                    }
                }
            });
        }
    });
    (index, dist)
}

/// Rows whose distances the host search takes together: independent sums, so the core
/// overlaps them (one sum alone waits on each addition).
const NEIGHBOUR_BATCH: usize = 8;

/// The squared distances from `q` to the rows `batch` of `rows` (row-major, `q.len()`
/// features), each summed in feature order (the kernels' order), the sums interleaved.
fn batch_sq_distances(q: &[f32], rows: &[f32], batch: &[u32]) -> [f32; NEIGHBOUR_BATCH] {
    let d = q.len();
    let last = batch.len() - 1;
    let xs: [&[f32]; NEIGHBOUR_BATCH] = std::array::from_fn(|t| {
        let j = batch[t.min(last)] as usize;
        &rows[j * d..(j + 1) * d]
    });
    let mut acc = [0.0f32; NEIGHBOUR_BATCH];
    for (f, &a) in q.iter().enumerate() {
        for (sum, x) in acc.iter_mut().zip(&xs) {
            let diff = a - x[f];
            *sum += diff * diff;
        }
    }
    acc
}

/// Inserts row `g` at squared distance `d2` into the sorted list (`index`, `dist`) when it
/// beats the last entry, as `knn_update` does.
fn insert_neighbour(index: &mut [u32], dist: &mut [f32], g: u32, d2: f32) {
    let last = index.len() - 1;
    if !(d2 < dist[last] || (d2 == dist[last] && g < index[last])) {
        return;
    }
    let mut t = last;
    while t > 0 && (dist[t - 1] > d2 || (dist[t - 1] == d2 && index[t - 1] > g)) {
        dist[t] = dist[t - 1];
        index[t] = index[t - 1];
        t -= 1;
    }
    dist[t] = d2;
    index[t] = g;
}

/// The order of the rows by their first feature, and each row's place in it: both searches
/// walk outwards from a query's place and stop on a side once the first feature's squared gap
/// alone rules every further row out.
fn by_first_feature(rows: &[f32], d: usize) -> (Vec<u32>, Vec<usize>) {
    let n = rows.len() / d;
    let mut by_first: Vec<u32> = (0..n as u32).collect();
    by_first.sort_by(|&a, &b| rows[a as usize * d].total_cmp(&rows[b as usize * d]));
    let mut place = vec![0usize; n];
    for (p, &r) in by_first.iter().enumerate() {
        place[r as usize] = p;
    }
    (by_first, place)
}

/// The host twin of `range_count` / `range_fill`: every row within ε of every row (d² ≤
/// `radius_sq`, the row itself included), each row's entries in increasing index, the squared
/// distances (summed in feature order as the kernels' chain) as values. Each query walks the
/// rows in the order of their first feature outwards from its own place and stops on a side
/// once the first feature's squared gap exceeds ε²: exact, since d² is at least that term.
/// Queries are split over the available threads; each list depends on its row only.
pub(crate) fn within_radius_host(rows: &[f32], d: usize, radius_sq: f32) -> Csr {
    let n = rows.len() / d.max(1);
    let mut lists: Vec<Vec<(u32, f32)>> = vec![Vec::new(); n];
    if n > 0 {
        let (by_first, place) = by_first_feature(rows, d);
        let (by_first, place) = (&by_first[..], &place[..]);
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        let per_thread = n.div_ceil(threads.min(n));
        std::thread::scope(|s| {
            for (part, lists) in lists.chunks_mut(per_thread).enumerate() {
                s.spawn(move || {
                    for (i, list) in (part * per_thread..).zip(lists) {
                        let q = &rows[i * d..(i + 1) * d];
                        let gap = |p: usize| {
                            let t = q[0] - rows[by_first[p] as usize * d];
                            t * t
                        };
                        let mut consider = |p: usize| {
                            let j = by_first[p] as usize;
                            let d2 = q
                                .iter()
                                .zip(&rows[j * d..(j + 1) * d])
                                .fold(0.0f32, |acc, (&a, &b)| acc + (a - b) * (a - b));
                            if d2 <= radius_sq {
                                list.push((j as u32, d2));
                            }
                        };
                        let mut up = place[i];
                        while up < n && gap(up) <= radius_sq {
                            consider(up);
                            up += 1;
                        }
                        let mut down = place[i];
                        while down > 0 && gap(down - 1) <= radius_sq {
                            down -= 1;
                            consider(down);
                        }
                        list.sort_unstable_by_key(|e| e.0);
                    }
                });
            }
        });
    }
    let mut csr = Csr {
        row_starts: Vec::with_capacity(n + 1),
        cols: Vec::new(),
        values: Vec::new(),
    };
    csr.row_starts.push(0);
    for list in lists {
        csr.cols.extend(list.iter().map(|e| e.0));
        csr.values.extend(list.iter().map(|e| e.1));
        csr.row_starts.push(csr.cols.len() as u32);
    }
    csr
}

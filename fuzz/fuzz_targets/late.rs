//! Late-chunking windows and pooling: windows cover every token, neighbours
//! share at least `overlap` tokens, no fewer windows could, each token's owner
//! holds it as far from an edge as any window does; span token ranges lie in
//! range and inside (or overlapping) the span; pooled vectors are finite and
//! unit length when normalized.
#![no_main]

use _native::late::{mean_pool, owners, span_tokens, window_starts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let n = u16::from_le_bytes([data[0], data[1]]) as usize % 1200;
    let window = 1 + u16::from_le_bytes([data[2], data[3]]) as usize % 300;
    let overlap = data[4] as usize % window;
    let starts = window_starts(n, window, overlap);
    assert_eq!(starts[0], 0);
    if n > window {
        assert_eq!(starts.last().unwrap() + window, n, "the last window ends at n");
        for w in starts.windows(2) {
            assert!(w[0] < w[1] && w[0] + window >= w[1] + overlap, "neighbours {w:?} share < {overlap}");
        }
        let k = starts.len();
        assert!((k - 1) * (window - overlap) + overlap < n, "{k} windows where {} would do", k - 1);
    }
    let own = owners(n, window, &starts);
    assert_eq!(own.len(), n);
    for (p, &w) in own.iter().enumerate() {
        let depth = |a: usize| {
            let b = (a + window).min(n);
            (a <= p && p < b).then(|| (p - a).min(b - 1 - p))
        };
        let mine = depth(starts[w as usize]).expect("owner window holds the token");
        assert!(starts.iter().all(|&a| depth(a).is_none_or(|d| d <= mine)));
    }
    // token offsets from the rest of the input: sorted, non-empty tokens
    let rest = &data[5..];
    let mut pos = 0i64;
    let (mut ts, mut te) = (vec![], vec![]);
    for pair in rest.chunks(2).take(256) {
        pos += (pair[0] % 4) as i64;
        let len = 1 + pair.get(1).map_or(0, |b| b % 5) as i64;
        ts.push(pos);
        te.push(pos + len);
        pos += len;
    }
    let dim = 3;
    let vectors: Vec<f32> = (0..ts.len() * dim).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
    let mut ranges = vec![];
    for (i, pair) in rest.chunks(2).enumerate().take(64) {
        let (s, e) = (pair[0] as i64, pair[0] as i64 + pair.get(1).copied().unwrap_or(0) as i64);
        match span_tokens(&ts, &te, s, e) {
            Some((lo, hi)) => {
                assert!(lo < hi && hi <= ts.len(), "span {i}: ({lo}, {hi})");
                let inside = (lo..hi).all(|t| s <= ts[t] && te[t] <= e);
                let overlapping = (lo..hi).all(|t| ts[t] < e && s < te[t]);
                assert!(inside || overlapping, "span ({s}, {e}) -> tokens {lo}..{hi}");
                ranges.push((lo, hi));
            }
            None => assert!(!(0..ts.len()).any(|t| ts[t] < e && s < te[t]), "span ({s}, {e}) overlaps a token"),
        }
    }
    for normalize in [false, true] {
        let pooled = mean_pool(&vectors, dim, &ranges, normalize);
        assert_eq!(pooled.len(), ranges.len() * dim);
        for row in pooled.chunks(dim) {
            assert!(row.iter().all(|x| x.is_finite()));
            let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!(!normalize || norm == 0.0 || (norm - 1.0).abs() < 1e-5, "norm {norm}");
        }
    }
});

//! Late chunking: overlapping macro windows over a long document's tokens, the
//! window each token's vector is taken from, the tokens inside a character span,
//! and mean pooling of token vectors per span.

/// Start token of each window of `window` tokens over `n` tokens: as few windows
/// as keep at least `overlap` tokens shared by neighbours, spread evenly, the last
/// one ending at `n`. One window when `n <= window`.
pub fn window_starts(n: usize, window: usize, overlap: usize) -> Vec<usize> {
    assert!(window > overlap, "window must exceed overlap");
    if n <= window {
        return vec![0];
    }
    let k = (n - overlap).div_ceil(window - overlap);
    (0..k).map(|i| i * (n - window) / (k - 1)).collect()
}

/// For each of `n` tokens the window it is taken from: among the windows holding
/// it, the one where it sits farthest from an edge (the first on a tie).
pub fn owners(n: usize, window: usize, starts: &[usize]) -> Vec<u32> {
    let mut best = vec![(0u32, -1i64); n];
    for (w, &a) in starts.iter().enumerate() {
        let b = (a + window).min(n);
        for (p, slot) in best.iter_mut().enumerate().take(b).skip(a) {
            let depth = (p - a).min(b - 1 - p) as i64;
            if depth > slot.1 {
                *slot = (w as u32, depth);
            }
        }
    }
    best.into_iter().map(|(w, _)| w).collect()
}

/// Token range `[lo, hi)` of the span `[s, e)`: the tokens whose offsets lie inside
/// it, else (a span cutting inside tokens) the tokens overlapping it; `None` when no
/// token overlaps it. `starts`/`ends` are the tokens' offsets, sorted.
pub fn span_tokens(starts: &[i64], ends: &[i64], s: i64, e: i64) -> Option<(usize, usize)> {
    let lo = starts.partition_point(|&x| x < s);
    let hi = ends.partition_point(|&x| x <= e);
    if lo < hi {
        return Some((lo, hi));
    }
    let lo = ends.partition_point(|&x| x <= s);
    let hi = starts.partition_point(|&x| x < e);
    (lo < hi).then_some((lo, hi))
}

/// Mean of rows `lo..hi` of the row-major `(t, dim)` matrix `vectors` for each
/// range, accumulated in f64, L2-normalized when `normalize`.
pub fn mean_pool(vectors: &[f32], dim: usize, ranges: &[(usize, usize)], normalize: bool) -> Vec<f32> {
    let mut out = Vec::with_capacity(ranges.len() * dim);
    let mut acc = vec![0f64; dim];
    for &(lo, hi) in ranges {
        acc.fill(0.0);
        for row in vectors[lo * dim..hi * dim].chunks_exact(dim) {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a += x as f64;
            }
        }
        let count = (hi - lo).max(1) as f64;
        let scale = if normalize {
            let norm = acc.iter().map(|a| a * a).sum::<f64>().sqrt();
            1.0 / norm.max(1e-12 * count)
        } else {
            1.0 / count
        };
        out.extend(acc.iter().map(|a| (a * scale) as f32));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_and_overlap() {
        assert_eq!(window_starts(10, 16, 4), vec![0]);
        assert_eq!(window_starts(16, 16, 4), vec![0]);
        assert_eq!(window_starts(17, 16, 4), vec![0, 1]);
        assert_eq!(window_starts(40, 16, 4), vec![0, 12, 24]);
        assert_eq!(window_starts(41, 16, 4), vec![0, 8, 16, 25]);
        for n in 17..300 {
            let st = window_starts(n, 16, 4);
            assert_eq!(st[st.len() - 1] + 16, n);
            for w in st.windows(2) {
                assert!(w[1] > w[0] && w[0] + 16 - w[1] >= 4);
            }
            let k = st.len();
            assert!((k - 1) * 16 - (k - 2) * 4 < n, "one window fewer would not cover {n} tokens");
        }
    }

    #[test]
    fn owner_is_deepest_window() {
        let st = window_starts(40, 16, 4);
        let own = owners(40, 16, &st);
        assert_eq!(&own[..14], &[0; 14]);
        assert_eq!(&own[14..26], &[1; 12]);
        assert_eq!(&own[26..], &[2; 14]);
    }

    #[test]
    fn spans_to_tokens() {
        // tokens "ab" [0,2) "cd" [3,5) "##ef" [5,7)
        let (s, e) = (vec![0, 3, 5], vec![2, 5, 7]);
        assert_eq!(span_tokens(&s, &e, 0, 7), Some((0, 3)));
        assert_eq!(span_tokens(&s, &e, 3, 5), Some((1, 2)));
        assert_eq!(span_tokens(&s, &e, 4, 6), Some((1, 3))); // inside tokens: overlapping ones
        assert_eq!(span_tokens(&s, &e, 2, 3), None); // whitespace only
    }

    #[test]
    fn pooling() {
        let v = [1.0, 0.0, 3.0, 4.0];
        assert_eq!(mean_pool(&v, 2, &[(0, 2)], false), vec![2.0, 2.0]);
        assert_eq!(mean_pool(&v, 2, &[(1, 2)], true), vec![0.6, 0.8]);
    }
}

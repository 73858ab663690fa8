//! Parallel work over many texts: rayon's global pool for all cores, and for an
//! explicit number of threads a pool from a small least-recently-used set, so that
//! many distinct values cannot pile up live threads.

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::error::{input, Result};

/// The largest `threads` accepted: 4 x the cores (more threads than that only
/// cost memory and scheduling, and a typo like `threads=10**6` would otherwise
/// try to start a million OS threads).
pub fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pools kept for explicit `threads` values, least recently used first: at most
/// this many.
const KEPT_POOLS: usize = 4;

/// The kept pools and their number of threads, least recently used first.
static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());

/// A pool of `n` threads from the kept pools (an evicted pool's threads exit once
/// the pool is no longer in use).
fn pool(n: usize) -> Result<Arc<rayon::ThreadPool>> {
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = pools.iter().position(|(k, _)| *k == n) {
        let entry = pools.remove(i);
        let pool = entry.1.clone();
        pools.push(entry);
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().map_err(|e| input!("threads={n}: cannot start the threads: {e}"))?;
    let pool = Arc::new(pool);
    if pools.len() >= KEPT_POOLS {
        pools.remove(0);
    }
    pools.push((n, pool.clone()));
    Ok(pool)
}

/// Checks a `threads` argument: `1 <= threads <= max_threads()`.
fn check_threads(threads: Option<usize>) -> Result<()> {
    match threads {
        Some(n) if n < 1 || n > max_threads() => {
            Err(input!("threads must be between 1 and {} (4 x the {} cores), got {n}", max_threads(), max_threads() / 4))
        }
        _ => Ok(()),
    }
}

/// Runs `f` over `items` on `threads` threads (None: all cores), in input order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], threads: Option<usize>, f: impl Fn(&T) -> R + Sync + Send) -> Result<Vec<R>> {
    check_threads(threads)?;
    match threads {
        Some(1) => Ok(items.iter().map(f).collect()),
        None => Ok(items.par_iter().map(f).collect()),
        Some(n) => Ok(pool(n)?.install(|| items.par_iter().map(f).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_keep_order_and_refuse_bad_counts() {
        let items: Vec<usize> = (0..100).collect();
        for threads in [None, Some(1), Some(2), Some(3)] {
            assert_eq!(parallel_map(&items, threads, |&x| x * 2).unwrap(), items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
        for bad in [0, max_threads() + 1] {
            assert!(matches!(parallel_map(&items, Some(bad), |&x| x), Err(crate::error::Error::Input(_))));
        }
    }

    #[test]
    fn a_pool_is_reused_and_at_most_kept_pools_are_kept() {
        for n in 1..=KEPT_POOLS + 2 {
            assert_eq!(pool(n).unwrap().current_num_threads(), n);
        }
        assert!(Arc::ptr_eq(&pool(2).unwrap(), &pool(2).unwrap()));
        assert!(POOLS.lock().unwrap().len() <= KEPT_POOLS);
    }
}

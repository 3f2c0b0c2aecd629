//! Read-only work spread over the machine's cores: each worker thread
//! reads through its own connection (SQLite readers in WAL mode do not
//! wait for each other), the calling thread through the store it has.
//!
//! A central's `history` is one independent read per cluster; on one
//! connection a thousand clusters are read one after the other on one
//! core while the others idle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;

use super::{Store, StoreError};

/// Worker threads at most, the calling thread included: a query from the
/// command line should not take every core of a central whose daemon is
/// still taking its fleet's logs.
const MAX_WORKERS: usize = 4;

/// `f` applied to every item of `work` (an item is typically a cluster),
/// the results in `work`'s order. Items are taken in order by whichever
/// worker is free, so one large cluster does not leave the others' share
/// waiting. On an error the first failing item's (in `work`'s order) is
/// returned; items not yet started are left.
pub(crate) fn fan_out<W, T, E>(
    store: &Store,
    work: &[W],
    f: impl Fn(&Store, &W) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E>
where
    W: Sync,
    T: Send,
    E: From<StoreError> + Send,
{
    let workers = thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_WORKERS).min(work.len());
    if workers <= 1 {
        return work.iter().map(|w| f(store, w)).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(usize::MAX);
    let done: Mutex<Vec<(usize, Result<T, E>)>> = Mutex::new(Vec::with_capacity(work.len()));
    let take = |store: &Store| loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        // Past an error only the items before it can still change the answer.
        if i >= work.len() || i > failed.load(Ordering::Relaxed) {
            return;
        }
        let result = f(store, &work[i]);
        if result.is_err() {
            failed.fetch_min(i, Ordering::Relaxed);
        }
        done.lock().unwrap_or_else(|e| e.into_inner()).push((i, result));
    };
    let path = store.path();
    thread::scope(|s| {
        for _ in 1..workers {
            s.spawn(|| match Store::open_read_only(path) {
                Ok(own) => take(&own),
                Err(e) => {
                    // The item this worker would have read next gets the
                    // error; with none left, nothing went unread.
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i < work.len() {
                        failed.fetch_min(i, Ordering::Relaxed);
                        done.lock().unwrap_or_else(|e| e.into_inner()).push((i, Err(e.into())));
                    }
                }
            });
        }
        take(store);
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    let mut results = Vec::with_capacity(work.len());
    for (_, result) in done {
        results.push(result?);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(clusters: &[&str]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("w.db")).unwrap();
        for c in clusters {
            store.clusters_mut().find_or_create(c).unwrap();
        }
        (dir, store)
    }

    #[test]
    fn every_item_is_read_once_and_answered_in_order() {
        let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
        let (_dir, store) = store_with(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let calls = AtomicUsize::new(0);
        let ids = fan_out(&store, &names, |s, name| {
            calls.fetch_add(1, Ordering::Relaxed);
            s.clusters().find(name).map(|id| (name.clone(), id.unwrap()))
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 40);
        let expected: Vec<(String, i64)> =
            names.iter().map(|n| (n.clone(), store.clusters().find(n).unwrap().unwrap())).collect();
        assert_eq!(ids, expected);
    }

    #[derive(Debug, PartialEq)]
    enum Missing {
        Store(String),
        Cluster(String),
    }

    impl From<StoreError> for Missing {
        fn from(e: StoreError) -> Missing {
            Missing::Store(e.to_string())
        }
    }

    #[test]
    fn the_first_failing_item_in_order_is_the_error() {
        let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
        let (_dir, store) = store_with(&["c00", "c01", "c02", "c04"]);
        let err = fan_out(&store, &names, |s, name| match s.clusters().find(name)? {
            Some(id) => Ok(id),
            None => Err(Missing::Cluster(name.clone())),
        })
        .unwrap_err();
        assert_eq!(err, Missing::Cluster("c03".into()));
    }

    /// A worker that cannot open its own connection fails the call: the
    /// item it took is never left out silently.
    #[test]
    fn a_worker_without_a_connection_is_an_error_not_a_missing_cluster() {
        let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
        let (dir, store) = store_with(&names.iter().map(String::as_str).collect::<Vec<_>>());
        // The calling thread's connection reads on; a new one finds no store.
        std::fs::rename(dir.path().join("w.db"), dir.path().join("moved.db")).unwrap();
        // Slow items (0.8 s in all), so that the other worker, whose open
        // fails at once, asks for one before the calling thread has read
        // them all, even on a loaded machine.
        let answer = fan_out(&store, &names, |s, name| {
            thread::sleep(std::time::Duration::from_millis(20));
            s.clusters().find(name).map(Option::unwrap)
        });
        if thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
            let err = answer.unwrap_err().to_string();
            assert!(err.contains("w.db"), "{err}");
        } else {
            assert_eq!(answer.unwrap().len(), 40, "one core: the calling thread reads all");
        }
    }

    #[test]
    fn nothing_to_do_is_an_empty_answer() {
        let (_dir, store) = store_with(&[]);
        let none: Vec<i64> = fan_out(&store, &[] as &[String], |_, _| Ok::<_, StoreError>(1)).unwrap();
        assert!(none.is_empty());
    }
}

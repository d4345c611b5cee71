//! A map over a list on several threads whose results are consumed in the list's order,
//! on the calling thread, while the other items are still being mapped.
//!
//! Rule loading uses it: parsing a rule is independent of the rules around it and is half of
//! a start-up's work, while recording the parsed rules (duplicate sids, compiling each into
//! the engine) must follow the file's order.
//!
//! Items go out in chunks; at most [`WINDOW_PER_THREAD`] chunks per thread are mapped and not
//! yet consumed, so the results held at once stay bounded however far the mapping threads
//! run ahead of the consumer.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Mutex};

/// Chunks mapped ahead of the consumer, per mapping thread.
const WINDOW_PER_THREAD: usize = 4;

/// A chunk's results, or the panic that mapping it raised (raised again on the caller).
type Mapped<R> = Result<Vec<R>, Box<dyn std::any::Any + Send>>;

/// Calls `consume(map(item))` for every item, in order. With `threads` above 1 and more than
/// one chunk of `chunk` items, `threads` scoped threads map the chunks while the calling
/// thread consumes; otherwise everything runs on the calling thread. A panic in `map` is
/// raised again on the calling thread once the threads have stopped.
pub fn map_in_order<T, R>(
    items: Vec<T>,
    threads: usize,
    chunk: usize,
    map: impl Fn(T) -> R + Sync,
    mut consume: impl FnMut(R),
) where
    T: Send,
    R: Send,
{
    let chunk = chunk.max(1);
    if threads <= 1 || items.len() <= chunk {
        items.into_iter().for_each(|item| consume(map(item)));
        return;
    }
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(items.len().div_ceil(chunk));
    let mut items = items.into_iter();
    loop {
        let next: Vec<T> = items.by_ref().take(chunk).collect();
        if next.is_empty() {
            break;
        }
        chunks.push(next);
    }
    let total = chunks.len();
    let work = Mutex::new(chunks.into_iter().enumerate());
    let window = threads * WINDOW_PER_THREAD;
    // A mapping thread takes a ticket before each chunk; the consumer hands one back per
    // chunk consumed. The ticket sender and the result receiver are moved into the scope: if
    // the consumer panics, they are dropped while unwinding and the threads stop instead of
    // waiting forever.
    let (ticket_tx, ticket_rx) = mpsc::sync_channel::<()>(window);
    for _ in 0..window {
        let _ = ticket_tx.try_send(());
    }
    let ticket_rx = Mutex::new(ticket_rx);
    std::thread::scope(|scope| {
        let ticket_tx = ticket_tx;
        let (done_tx, done_rx) = mpsc::channel::<(usize, Mapped<R>)>();
        for _ in 0..threads {
            let (work, ticket_rx, map, done_tx) = (&work, &ticket_rx, &map, done_tx.clone());
            scope.spawn(move || loop {
                let ticket = ticket_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                if ticket.is_err() {
                    return;
                }
                let Some((index, items)) = work.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                    return;
                };
                let mapped = catch_unwind(AssertUnwindSafe(|| items.into_iter().map(map).collect()));
                if done_tx.send((index, mapped)).is_err() {
                    return;
                }
            });
        }
        drop(done_tx);
        let mut waiting: BTreeMap<usize, Vec<R>> = BTreeMap::new();
        let mut next = 0;
        while next < total {
            let Ok((index, mapped)) = done_rx.recv() else { break };
            match mapped {
                Ok(results) => waiting.insert(index, results),
                Err(panic) => {
                    drop(ticket_tx);
                    resume_unwind(panic)
                }
            };
            while let Some(results) = waiting.remove(&next) {
                results.into_iter().for_each(&mut consume);
                next += 1;
                let _ = ticket_tx.try_send(());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Results come in the items' order whatever the threads, and every item is mapped once.
    #[test]
    fn results_come_in_order() {
        for threads in [1, 2, 3, 8] {
            for (n, chunk) in [(0, 4), (1, 4), (4, 4), (5, 4), (1000, 7), (1000, 1)] {
                let mapped = AtomicUsize::new(0);
                let mut out = Vec::new();
                map_in_order(
                    (0..n).collect(),
                    threads,
                    chunk,
                    |i: usize| {
                        mapped.fetch_add(1, Ordering::Relaxed);
                        // Later items are quicker: threads finish out of order.
                        std::thread::sleep(std::time::Duration::from_micros(((n - i) % 5) as u64 * 20));
                        i * 2
                    },
                    |r| out.push(r),
                );
                assert_eq!(out, (0..n).map(|i| i * 2).collect::<Vec<_>>(), "threads {threads} n {n} chunk {chunk}");
                assert_eq!(mapped.load(Ordering::Relaxed), n);
            }
        }
    }

    /// The mapping threads stay within their window of the consumer: with a consumer that
    /// is slow, no more than `threads * WINDOW_PER_THREAD` chunks are ever mapped ahead.
    #[test]
    fn mapping_waits_for_the_consumer() {
        let (threads, chunk) = (2, 3);
        let mapped = AtomicUsize::new(0);
        let mut consumed = 0usize;
        let mut most_ahead = 0usize;
        map_in_order(
            (0..600).collect::<Vec<usize>>(),
            threads,
            chunk,
            |i| {
                mapped.fetch_add(1, Ordering::SeqCst);
                i
            },
            |_| {
                consumed += 1;
                std::thread::sleep(std::time::Duration::from_micros(50));
                most_ahead = most_ahead.max(mapped.load(Ordering::SeqCst) - consumed);
            },
        );
        assert_eq!(consumed, 600);
        // Chunks mapped but not consumed, plus the one being consumed.
        let bound = (threads * WINDOW_PER_THREAD + 1) * chunk;
        assert!(most_ahead <= bound, "{most_ahead} items mapped ahead of the consumer, bound {bound}");
        assert!(most_ahead >= chunk, "the threads did map ahead ({most_ahead})");
    }

    /// A panic while mapping reaches the caller, and the threads stop (the call returns).
    #[test]
    fn a_panic_while_mapping_reaches_the_caller() {
        let result = std::panic::catch_unwind(|| {
            map_in_order(
                (0..100).collect::<Vec<usize>>(),
                2,
                4,
                |i| {
                    assert!(i != 57, "item 57");
                    i
                },
                |_| {},
            )
        });
        let panic = result.expect_err("the panic came through");
        let text = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(text.contains("item 57"), "{text}");
    }
}

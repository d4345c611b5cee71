//! Ordered merge of the workers' event streams into one eve.json.
//!
//! Each event carries a sort key derived from the packet that caused it, so the merged file
//! is in capture order and identical run to run whatever the thread timing. A worker's
//! stream is already sorted; alongside its events a worker reports a *watermark*: every
//! event it sends later has an order (key, sub) at least that large. The merger writes an
//! event once its order is below every worker's watermark.

use crossbeam_channel::{Receiver, Select};
use std::collections::VecDeque;
use std::io::{self, Write};

pub use picket_core::inspect::{clock_key, packet_key, SHUTDOWN_KEY};

/// Which log file a line goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    Eve = 0,
    FastLog = 1,
}

/// Number of [`Sink`]s: the merger takes one writer per sink.
pub const SINKS: usize = 2;

/// Serialized log lines with their sort keys, written by one worker.
///
/// A line's order is (key, sub). `sub` tells apart the events that share a clock or
/// shutdown key: flows ending at the same moment sort by their first packet, so the merged
/// file does not depend on which worker held which flow. Lines may be pushed out of order
/// (within one key, or a worker inspecting packets it held back for flows handed to it);
/// [`EventBuf::settle`] puts them in order.
#[derive(Default)]
pub struct EventBuf {
    bytes: Vec<u8>,
    /// (key, sub, end offset in `bytes`, sink) per line, in the order written.
    lines: Vec<(u64, u64, usize, Sink)>,
    /// A line was pushed with a smaller sub than the line before it under the same key.
    unsettled: bool,
}

impl EventBuf {
    /// Appends one eve line; `write` must produce a complete line ending in '\n'.
    pub fn push(&mut self, key: u64, write: impl FnOnce(&mut Vec<u8>)) {
        self.push_to(Sink::Eve, key, write)
    }

    pub fn push_to(&mut self, sink: Sink, key: u64, write: impl FnOnce(&mut Vec<u8>)) {
        self.push_sub(sink, key, 0, write)
    }

    /// Appends a line ordered by (key, sub).
    pub fn push_sub(&mut self, sink: Sink, key: u64, sub: u64, write: impl FnOnce(&mut Vec<u8>)) {
        if let Some(&(last_key, last_sub, _, _)) = self.lines.last() {
            self.unsettled |= (key, sub) < (last_key, last_sub);
        }
        write(&mut self.bytes);
        self.lines.push((key, sub, self.bytes.len(), sink));
    }

    /// Puts the lines in (key, sub) order (stable: one event's lines keep theirs).
    pub fn settle(&mut self) {
        if !std::mem::take(&mut self.unsettled) {
            return;
        }
        let mut starts = Vec::with_capacity(self.lines.len());
        let mut start = 0;
        for &(_, _, end, _) in &self.lines {
            starts.push(start);
            start = end;
        }
        let mut order: Vec<usize> = (0..self.lines.len()).collect();
        order.sort_by_key(|&i| (self.lines[i].0, self.lines[i].1));
        let mut bytes = Vec::with_capacity(self.bytes.len());
        let mut lines = Vec::with_capacity(self.lines.len());
        for i in order {
            let (key, sub, end, sink) = self.lines[i];
            bytes.extend_from_slice(&self.bytes[starts[i]..end]);
            lines.push((key, sub, bytes.len(), sink));
        }
        self.bytes = bytes;
        self.lines = lines;
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
    /// (key, sub) of the line pushed last.
    pub fn last_order(&self) -> Option<Order> {
        self.lines.last().map(|&(key, sub, _, _)| (key, sub))
    }
    pub fn len(&self) -> usize {
        self.lines.len()
    }
    pub fn lines(&self) -> impl Iterator<Item = (u64, Sink, &[u8])> + '_ {
        let mut start = 0;
        self.lines.iter().map(move |&(key, _, end, sink)| {
            let line = &self.bytes[start..end];
            start = end;
            (key, sink, line)
        })
    }
}

/// Where a line sorts: (key, sub) (see [`EventBuf`]).
pub type Order = (u64, u64);

/// The watermark of a worker that sends nothing more.
pub const END_WATERMARK: Order = (u64::MAX, u64::MAX);

/// What a worker sends to the merger.
pub struct OutputChunk {
    pub events: EventBuf,
    /// Later chunks from this worker hold only lines ordered at or after the watermark.
    /// A clock watermark is `(clock_key(n), 0)`; while a worker ends its flows at shutdown
    /// (in first-packet order) it is `(SHUTDOWN_KEY, first packet of the next flow)`, so
    /// that those lines are written as they come rather than held until the worker ends.
    pub watermark: Order,
}

struct Stream {
    chunks: VecDeque<(EventBuf, usize)>,
    watermark: Order,
    open: bool,
}

impl Stream {
    fn head_key(&self) -> Option<Order> {
        let (buf, next) = self.chunks.front()?;
        let (key, sub, _, _) = buf.lines[*next];
        Some((key, sub))
    }
}

/// Runs until every sender has hung up; returns the number of lines written.
pub fn merge_ordered(inputs: Vec<Receiver<OutputChunk>>, out: &mut [&mut dyn Write; SINKS]) -> io::Result<u64> {
    let mut streams: Vec<Stream> =
        inputs.iter().map(|_| Stream { chunks: VecDeque::new(), watermark: (0, 0), open: true }).collect();
    let mut written = 0u64;
    while streams.iter().any(|s| s.open) {
        let mut sel = Select::new();
        let mut map = Vec::new();
        for (i, rx) in inputs.iter().enumerate() {
            if streams[i].open {
                sel.recv(rx);
                map.push(i);
            }
        }
        let op = sel.select();
        let i = map[op.index()];
        match op.recv(&inputs[i]) {
            Ok(chunk) => {
                streams[i].watermark = streams[i].watermark.max(chunk.watermark);
                if !chunk.events.is_empty() {
                    streams[i].chunks.push_back((chunk.events, 0));
                }
            }
            Err(_) => {
                streams[i].open = false;
                streams[i].watermark = END_WATERMARK;
            }
        }
        let limit = streams.iter().map(|s| s.watermark).min().unwrap_or(END_WATERMARK);
        written += drain_below(&mut streams, limit, out)?;
    }
    // Every worker has finished: the rest, shutdown events included, in key order.
    written += drain_below(&mut streams, END_WATERMARK, out)?;
    written += drain_all(&mut streams, out)?;
    Ok(written)
}

/// Writes, smallest (key, sub) first (ties by worker index), every buffered line ordered
/// before `limit`.
fn drain_below(streams: &mut [Stream], limit: Order, out: &mut [&mut dyn Write; SINKS]) -> io::Result<u64> {
    let mut n = 0;
    loop {
        let best = streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.head_key().map(|k| (k, i)))
            .filter(|&(order, _)| order < limit)
            .min();
        let Some((_, i)) = best else { return Ok(n) };
        pop_line(&mut streams[i], out)?;
        n += 1;
    }
}

fn drain_all(streams: &mut [Stream], out: &mut [&mut dyn Write; SINKS]) -> io::Result<u64> {
    let mut n = 0;
    while let Some((_, i)) = streams.iter().enumerate().filter_map(|(i, s)| s.head_key().map(|k| (k, i))).min() {
        pop_line(&mut streams[i], out)?;
        n += 1;
    }
    Ok(n)
}

fn pop_line(stream: &mut Stream, out: &mut [&mut dyn Write; SINKS]) -> io::Result<()> {
    let (buf, next) = stream.chunks.front_mut().expect("head exists");
    let start = if *next == 0 { 0 } else { buf.lines[*next - 1].2 };
    let (_, _, end, sink) = buf.lines[*next];
    out[sink as usize].write_all(&buf.bytes[start..end])?;
    *next += 1;
    if *next == buf.lines.len() {
        stream.chunks.pop_front();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::bounded;

    fn chunk(lines: &[(u64, &str)], watermark: u64) -> OutputChunk {
        chunk_sub(&lines.iter().map(|&(k, s)| (k, 0, s)).collect::<Vec<_>>(), (watermark, 0))
    }

    fn chunk_sub(lines: &[(u64, u64, &str)], watermark: Order) -> OutputChunk {
        let mut events = EventBuf::default();
        for &(k, sub, s) in lines {
            events.push_sub(Sink::Eve, k, sub, |b| {
                b.extend_from_slice(s.as_bytes());
                b.push(b'\n')
            });
        }
        OutputChunk { events, watermark }
    }

    #[test]
    fn merges_in_key_order_with_worker_tiebreak() {
        let (t0, r0) = bounded(8);
        let (t1, r1) = bounded(8);
        let h = std::thread::spawn(move || {
            let (mut eve, mut fast) = (Vec::new(), Vec::new());
            merge_ordered(vec![r0, r1], &mut [&mut eve, &mut fast]).unwrap();
            assert!(fast.is_empty());
            String::from_utf8(eve).unwrap()
        });
        // Worker 1 runs ahead; its events must still wait for worker 0's.
        t1.send(chunk(&[(packet_key(2), "b2"), (packet_key(5), "b5")], clock_key(6))).unwrap();
        t0.send(chunk(&[(packet_key(1), "a1"), (clock_key(3), "a3t")], clock_key(4))).unwrap();
        t0.send(chunk(&[(packet_key(7), "a7"), (SHUTDOWN_KEY, "a-end")], 0)).unwrap();
        t1.send(chunk(&[(SHUTDOWN_KEY, "b-end")], 0)).unwrap();
        drop((t0, t1));
        assert_eq!(h.join().unwrap(), "a1\nb2\na3t\nb5\na7\na-end\nb-end\n");
    }

    /// Shutdown lines under a (SHUTDOWN_KEY, sub) watermark are written as they come (not
    /// held until the worker hangs up), still merged across workers by first packet.
    #[test]
    fn shutdown_lines_are_written_before_the_workers_end_in_sub_order() {
        let (t0, r0) = bounded(8);
        let (t1, r1) = bounded(8);
        let (written_tx, written_rx) = bounded::<usize>(8);
        /// Reports the bytes written so far after every write.
        struct Probe(Vec<u8>, crossbeam_channel::Sender<usize>);
        impl Write for Probe {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.extend_from_slice(b);
                let _ = self.1.send(self.0.len());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let h = std::thread::spawn(move || {
            let (mut eve, mut fast) = (Probe(Vec::new(), written_tx), Vec::new());
            merge_ordered(vec![r0, r1], &mut [&mut eve, &mut fast]).unwrap();
            String::from_utf8(eve.0).unwrap()
        });
        t0.send(chunk_sub(&[(SHUTDOWN_KEY, 1, "f1"), (SHUTDOWN_KEY, 4, "f4")], (SHUTDOWN_KEY, 6))).unwrap();
        t1.send(chunk_sub(&[(SHUTDOWN_KEY, 2, "g2"), (SHUTDOWN_KEY, 5, "g5")], (SHUTDOWN_KEY, 5))).unwrap();
        // Both workers are still open: everything ordered before (SHUTDOWN_KEY, 5) is out.
        let mut seen = 0;
        while seen < "f1\ng2\nf4\n".len() {
            seen = written_rx.recv_timeout(std::time::Duration::from_secs(10)).expect("written before the end");
        }
        t1.send(chunk_sub(&[(SHUTDOWN_KEY, 7, "g7")], END_WATERMARK)).unwrap();
        t0.send(chunk_sub(&[(SHUTDOWN_KEY, 6, "f6")], END_WATERMARK)).unwrap();
        drop((t0, t1));
        assert_eq!(h.join().unwrap(), "f1\ng2\nf4\ng5\nf6\ng7\n");
    }

    #[test]
    fn settle_puts_lines_in_key_and_sub_order_keeping_each_events_lines() {
        let mut b = EventBuf::default();
        let line = |b: &mut EventBuf, sink, key, sub, text: &str| {
            b.push_sub(sink, key, sub, |out| {
                out.extend_from_slice(text.as_bytes());
                out.push(b'\n')
            })
        };
        // Flows ending at one tick in table order, then a held-back packet's alert.
        line(&mut b, Sink::Eve, clock_key(4), 9, "flow9");
        line(&mut b, Sink::Eve, clock_key(4), 2, "alert2");
        line(&mut b, Sink::FastLog, clock_key(4), 2, "fast2");
        line(&mut b, Sink::Eve, clock_key(4), 2, "flow2");
        line(&mut b, Sink::Eve, packet_key(7), 0, "p7");
        line(&mut b, Sink::Eve, packet_key(5), 0, "p5");
        b.settle();
        let got: Vec<_> = b.lines().map(|(_, sink, l)| (sink, String::from_utf8(l.to_vec()).unwrap())).collect();
        let want = [
            (Sink::Eve, "alert2\n"),
            (Sink::FastLog, "fast2\n"),
            (Sink::Eve, "flow2\n"),
            (Sink::Eve, "flow9\n"),
            (Sink::Eve, "p5\n"),
            (Sink::Eve, "p7\n"),
        ];
        assert_eq!(got, want.map(|(s, l)| (s, l.to_string())));
    }

    #[test]
    fn buf_lines_round_trip() {
        let c = chunk(&[(1, "x"), (2, "yy")], 0);
        let got: Vec<_> = c.events.lines().map(|(k, _, l)| (k, l.to_vec())).collect();
        assert_eq!(got, vec![(1, b"x\n".to_vec()), (2, b"yy\n".to_vec())]);
    }
}

use super::wire::{Message, Messages};
use super::*;

fn verdicts(batchcount: u32) -> Verdicts {
    Verdicts { queue: 0, batchcount, datagram: Vec::new(), open_batch: None, open_count: 0 }
}

/// The verdicts of a datagram as (kind, verdict, id): kind 1 single, 3 batch.
fn decode(datagram: &[u8]) -> Vec<(u8, u32, u32)> {
    let mut out = Vec::new();
    let mut rest = datagram;
    while rest.len() >= 28 {
        let len = u32::from_ne_bytes(rest[0..4].try_into().unwrap()) as usize;
        let kind = rest[4];
        let verdict = u32::from_be_bytes(rest[24..28].try_into().unwrap());
        let id = u32::from_be_bytes(rest[28..32].try_into().unwrap());
        out.push((kind, verdict, id));
        rest = &rest[len..];
    }
    out
}

#[test]
fn a_drop_closes_the_open_batch_first() {
    let mut v = verdicts(32);
    let mut stats = NfQueueStats::default();
    for id in 1..=3 {
        v.accept(id, &mut stats);
    }
    v.drop_packet(4, &mut stats);
    v.accept(5, &mut stats);
    v.accept(6, &mut stats);
    v.drop_packet(7, &mut stats);
    v.accept(8, &mut stats);
    v.close_batch(&mut stats);
    assert_eq!(
        decode(&v.datagram),
        vec![(3, NF_ACCEPT, 3), (1, NF_DROP, 4), (3, NF_ACCEPT, 6), (1, NF_DROP, 7), (1, NF_ACCEPT, 8)]
    );
    assert_eq!((stats.verdicts, stats.batches), (5, 2));
}

#[test]
fn batches_stop_at_batchcount_and_batchcount_one_sends_each() {
    let mut v = verdicts(2);
    let mut stats = NfQueueStats::default();
    for id in 10..15 {
        v.accept(id, &mut stats);
    }
    v.close_batch(&mut stats);
    assert_eq!(decode(&v.datagram), vec![(3, NF_ACCEPT, 11), (3, NF_ACCEPT, 13), (1, NF_ACCEPT, 14)]);

    let mut v = verdicts(1);
    v.accept(1, &mut stats);
    v.accept(2, &mut stats);
    v.close_batch(&mut stats);
    assert_eq!(decode(&v.datagram), vec![(1, NF_ACCEPT, 1), (1, NF_ACCEPT, 2)]);
}

#[test]
fn id_gaps_count_packets_the_socket_could_not_take() {
    assert_eq!(id_gap(0, 1), Some(0));
    assert_eq!(id_gap(5, 9), Some(3));
    assert_eq!(id_gap(u32::MAX, 1), Some(1), "ids wrap");
    assert_eq!(id_gap(9, 9), None);
    assert_eq!(id_gap(9, 5), None, "an earlier id is not a loss");
}

#[test]
fn proc_queue_lines_parse() {
    let text = "    0  12345     3 2 65535     7     9    1001 1\n    1 -4000 0 2 65535 0 0 0 1\nbad line\n";
    let queues = parse_proc_queues(text);
    assert_eq!(
        queues,
        vec![ProcQueue { queue: 0, port_id: 12345, waiting: 3, dropped: 7, user_dropped: 9, id_sequence: 1001 }]
    );
}

#[test]
fn config_bounds() {
    assert!(NfQueueConfig::default().validate().is_ok());
    let bad = |c: NfQueueConfig| c.validate().unwrap_err().to_string();
    assert!(bad(NfQueueConfig { batchcount: 0, ..Default::default() }).starts_with("nfq.batchcount: 0"));
    assert!(bad(NfQueueConfig { queue_maxlen: 0, ..Default::default() }).starts_with("nfq.queue-maxlen"));
    assert!(bad(NfQueueConfig { socket_buffer: 1, ..Default::default() }).starts_with("nfq.socket-buffer"));
}

#[test]
fn errors_are_one_line_naming_the_queue_and_the_fix() {
    let errors = [
        NfQueueError::NeedsPrivilege { queue: 3 },
        NfQueueError::QueueTaken { queue: 3, holder: Some(77) },
        NfQueueError::NoQueueModule { queue: 3 },
        NfQueueError::Setup { queue: 3, step: "bind the queue", source: io::Error::from_raw_os_error(libc::EINVAL) },
    ];
    for e in errors {
        let text = e.to_string();
        assert!(!text.contains('\n') && text.contains("queue 3"), "{text}");
    }
    assert!(NfQueueError::QueueTaken { queue: 3, holder: Some(77) }.to_string().contains("port 77"));
    assert!(NfQueueError::NoQueueModule { queue: 3 }.to_string().contains("modprobe nfnetlink_queue"));
}

#[test]
fn test_packets_round_trip_through_the_parser() {
    let mut datagram = Vec::new();
    wire::push_packet_for_test(&mut datagram, 0, 1, &[0x45; 20], None);
    assert!(matches!(Messages::new(&datagram).next(), Some(Ok(Message::Packet(p))) if p.id == 1));
}

//! DNS in the inspection path: feeding [`DnsState`] from UDP datagrams and the TCP stream,
//! the inspection buffers of one DNS transaction, and the `dns` object of eve alerts.
//!
//! Transactions follow Suricata 8: every message (request or response) is its own
//! transaction, complete when parsed. A request is inspected on a to-server packet, a
//! response on a to-client packet: over UDP the datagram's own packet, over TCP the packet
//! on which the stream releases the message (in IDS mode after the peer acked it).

use crate::applayer::dns::{DnsCounters, DnsRecord, DnsState, DnsTransaction, RData};
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::{AppNumber, Buffer};
use crate::stream::Direction;
use std::cell::OnceCell;

/// Worker-wide DNS counters of the inspection path (Suricata's `app_layer.flow.dns_*`,
/// `app_layer.tx.dns_*`) plus the parser's own anomaly counters.
#[derive(Default, Clone, Copy)]
pub(crate) struct DnsAppCounters {
    pub flows_udp: u64,
    pub flows_tcp: u64,
    pub tx_udp: u64,
    pub tx_tcp: u64,
    pub parser: DnsCounters,
}

impl DnsAppCounters {
    /// (name, value) in stats.log naming.
    pub(crate) fn counters(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        [
            ("app_layer.flow.dns_udp".to_string(), self.flows_udp),
            ("app_layer.flow.dns_tcp".to_string(), self.flows_tcp),
            ("app_layer.tx.dns_udp".to_string(), self.tx_udp),
            ("app_layer.tx.dns_tcp".to_string(), self.tx_tcp),
        ]
        .into_iter()
        .chain(self.parser.counters().map(|(name, v)| (format!("app_layer.{name}"), v)))
    }
}

/// The DNS parser of one flow.
pub(crate) struct DnsFlow {
    state: DnsState,
}

impl DnsFlow {
    pub(crate) fn new(tcp: bool, counters: &mut DnsAppCounters) -> Self {
        if tcp {
            counters.flows_tcp += 1;
        } else {
            counters.flows_udp += 1;
        }
        DnsFlow { state: DnsState::default() }
    }

    /// One UDP datagram of `dir`; `on_tx` gets the new transaction's id, if the message parsed.
    pub(crate) fn on_datagram(&mut self, dir: Direction, datagram: &[u8], counters: &mut DnsAppCounters, on_tx: &mut dyn FnMut(Direction, u64)) {
        if let Some(id) = self.state.parse_udp(dir, datagram, &mut counters.parser) {
            counters.tx_udp += 1;
            on_tx(dir, id);
        }
    }

    /// Stream bytes of `dir`; `on_tx` gets each transaction the bytes completed.
    pub(crate) fn on_stream(&mut self, dir: Direction, data: &[u8], counters: &mut DnsAppCounters, on_tx: &mut dyn FnMut(Direction, u64)) {
        let first_new = self.state.next_tx_id();
        self.state.parse_tcp(dir, data, &mut counters.parser);
        // Transaction ids are handed out consecutively, and only to parsed messages.
        let next = self.state.next_tx_id();
        counters.tx_tcp += next - first_new;
        for id in first_new..next {
            on_tx(dir, id);
        }
    }

    pub(crate) fn on_gap(&mut self, dir: Direction) {
        self.state.on_gap(dir);
    }

    pub(crate) fn tx(&self, id: u64) -> Option<&DnsTransaction> {
        self.state.tx(id)
    }

    /// Inspected transactions are complete: everything below `keep_from` goes.
    pub(crate) fn free_below(&mut self, keep_from: u64) {
        self.state.free_below(keep_from);
    }

    pub(crate) fn next_tx_id(&self) -> u64 {
        self.state.next_tx_id()
    }
}

/// The name an rdata carries, for the records whose data is a domain name (what
/// `dns.response.rrname` inspects besides the owner names).
fn rdata_name(rec: &DnsRecord) -> Option<&[u8]> {
    match &rec.rdata {
        RData::Name(n) | RData::Mx { exchange: n, .. } => Some(&n.bytes),
        RData::Soa(soa) => Some(&soa.mname.bytes),
        _ => None,
    }
}

/// Every name `dns.response.rrname` inspects, in Suricata's order: the questions, then per
/// answer, authority and additional record its owner name and a name-valued rdata. An empty
/// (root) owner name ends its section, as in Suricata.
fn response_names(tx: &DnsTransaction) -> Vec<&[u8]> {
    let m = &tx.message;
    let mut names: Vec<&[u8]> = m.questions.iter().map(|q| q.name.bytes.as_slice()).take_while(|n| !n.is_empty()).collect();
    for section in [&m.answers, &m.authorities, &m.additionals] {
        for rec in section.iter() {
            if rec.name.bytes.is_empty() {
                break;
            }
            names.push(&rec.name.bytes);
            if let Some(n) = rdata_name(rec).filter(|n| !n.is_empty()) {
                names.push(n);
            }
        }
    }
    names
}

/// The inspection buffers of one DNS transaction, seen from the packet's direction.
pub(crate) struct DnsTxBuffers<'a> {
    tx: &'a DnsTransaction,
    dir: Direction,
    /// Built on first use: most rule sets never ask for `dns.response.rrname`.
    response_names: OnceCell<Vec<&'a [u8]>>,
}

impl<'a> DnsTxBuffers<'a> {
    pub(crate) fn new(tx: &'a DnsTransaction, dir: Direction) -> Self {
        DnsTxBuffers { tx, dir, response_names: OnceCell::new() }
    }
}

impl BufferSource for DnsTxBuffers<'_> {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        self.get_nth(buffer, 0)
    }

    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        let tx = self.tx;
        match buffer.name {
            // Question names of requests only, inspected to the server.
            "dns.query" if self.dir == Direction::ToServer => tx.query_names().nth(index),
            "dns.queries.rrname" => tx.question_names().nth(index),
            "dns.answers.rrname" => tx.answer_names().nth(index),
            "dns.response.rrname" if self.dir == Direction::ToClient && !tx.is_request() => {
                self.response_names.get_or_init(|| response_names(tx)).get(index).copied()
            }
            _ => None,
        }
    }

    fn number(&self, field: AppNumber, index: usize) -> Option<u64> {
        let tx = self.tx;
        match field {
            AppNumber::DnsOpcode if index == 0 => Some(tx.opcode().into()),
            AppNumber::DnsRcode if index == 0 => Some(tx.rcode().into()),
            // Suricata: the questions' types in a request, the answers' types in a response.
            AppNumber::DnsRrtype if tx.is_request() => tx.query_rrtypes().nth(index).map(u64::from),
            AppNumber::DnsRrtype => tx.message.answers.get(index).map(|a| a.rrtype.into()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applayer::dns::labels;
    use crate::detect::rule::buffers::buffer_by_name;

    fn header(id: u16, flags: u16, qd: u16, an: u16, ns: u16) -> Vec<u8> {
        [id, flags, qd, an, ns, 0].iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// A request for `names` (type A) with opcode `opcode`.
    pub(crate) fn request(id: u16, opcode: u16, names: &[&str]) -> Vec<u8> {
        let mut m = header(id, 0x0100 | (opcode << 11), names.len() as u16, 0, 0);
        for n in names {
            m.extend(labels(n));
            m.extend([0, 1, 0, 1]);
        }
        m
    }

    /// A response to `qname`: a CNAME answer to `cname` and an NS authority `ns`.
    pub(crate) fn response(id: u16, qname: &str, cname: &str, ns: &str) -> Vec<u8> {
        let mut m = header(id, 0x8183, 1, 1, 1);
        m.extend(labels(qname));
        m.extend([0, 1, 0, 1]);
        for (rrtype, target) in [(5u8, cname), (2, ns)] {
            m.extend([0xc0, 12, 0, rrtype, 0, 1, 0, 0, 0, 60]);
            let rdata = labels(target);
            m.extend((rdata.len() as u16).to_be_bytes());
            m.extend(rdata);
        }
        m
    }

    fn all(b: &DnsTxBuffers<'_>, name: &str) -> Vec<String> {
        let buf = buffer_by_name(name).expect("known buffer");
        (0..).map_while(|i| b.get_nth(buf, i)).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
    }

    fn parse(dir: Direction, msg: &[u8]) -> (DnsFlow, u64) {
        let mut c = DnsAppCounters::default();
        let mut flow = DnsFlow::new(false, &mut c);
        let mut ids = Vec::new();
        flow.on_datagram(dir, msg, &mut c, &mut |_, id| ids.push(id));
        assert_eq!(c.tx_udp, 1);
        (flow, ids[0])
    }

    #[test]
    fn request_buffers() {
        let (flow, id) = parse(Direction::ToServer, &request(7, 4, &["a.example", "b.example"]));
        let tx = flow.tx(id).expect("tx");
        let b = DnsTxBuffers::new(tx, Direction::ToServer);
        assert_eq!(all(&b, "dns.query"), ["a.example", "b.example"]);
        assert_eq!(all(&b, "dns.queries.rrname"), ["a.example", "b.example"]);
        assert!(all(&b, "dns.answers.rrname").is_empty());
        assert!(all(&b, "dns.response.rrname").is_empty(), "requests have no response names");
        assert_eq!(b.number(AppNumber::DnsOpcode, 0), Some(4));
        assert_eq!(b.number(AppNumber::DnsOpcode, 1), None);
        assert_eq!(b.number(AppNumber::DnsRrtype, 1), Some(1));
        assert_eq!(b.number(AppNumber::DnsRrtype, 2), None);
        assert_eq!(b.number(AppNumber::TlsVersion, 0), None);
    }

    #[test]
    fn response_buffers() {
        let (flow, id) = parse(Direction::ToClient, &response(7, "www.oisf.net", "web.oisf.net", "ns1.dns.example"));
        let tx = flow.tx(id).expect("tx");
        let b = DnsTxBuffers::new(tx, Direction::ToClient);
        assert!(all(&b, "dns.query").is_empty(), "dns.query is for requests");
        assert_eq!(all(&b, "dns.queries.rrname"), ["www.oisf.net"]);
        assert_eq!(all(&b, "dns.answers.rrname"), ["www.oisf.net"]);
        assert_eq!(
            all(&b, "dns.response.rrname"),
            ["www.oisf.net", "www.oisf.net", "web.oisf.net", "www.oisf.net", "ns1.dns.example"]
        );
        assert_eq!(b.number(AppNumber::DnsRcode, 0), Some(3));
        // Answer types in a response (not the question's A): the one CNAME; the NS record
        // is an authority.
        assert_eq!(b.number(AppNumber::DnsRrtype, 0), Some(5));
        assert_eq!(b.number(AppNumber::DnsRrtype, 1), None);
    }

    #[test]
    fn tcp_stream_yields_each_framed_message() {
        let mut c = DnsAppCounters::default();
        let mut flow = DnsFlow::new(true, &mut c);
        let mut framed = Vec::new();
        for name in ["one.example", "two.example"] {
            let m = request(1, 0, &[name]);
            framed.extend((m.len() as u16).to_be_bytes());
            framed.extend(m);
        }
        let mut seen = Vec::new();
        let (head, tail) = framed.split_at(20);
        flow.on_stream(Direction::ToServer, head, &mut c, &mut |d, id| seen.push((d, id)));
        assert!(seen.is_empty(), "first message incomplete");
        flow.on_stream(Direction::ToServer, tail, &mut c, &mut |d, id| seen.push((d, id)));
        assert_eq!(seen, [(Direction::ToServer, 0), (Direction::ToServer, 1)]);
        assert_eq!((c.flows_tcp, c.tx_tcp), (1, 2));
        flow.free_below(1);
        assert!(flow.tx(0).is_none() && flow.tx(1).is_some());
    }
}

//! The inspection buffers of one DNS transaction (`dns.query`, `dns.queries.rrname`,
//! `dns.answers.rrname`, `dns.response.rrname`, and the opcode, rcode and rrtype numbers).

use crate::applayer::dns::{DnsRecord, DnsTransaction, RData};
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::{AppNumber, Buffer};
use crate::stream::Direction;
use std::cell::OnceCell;

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
    let mut names: Vec<&[u8]> =
        m.questions.iter().map(|q| q.name.bytes.as_slice()).take_while(|n| !n.is_empty()).collect();
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
pub(crate) mod tests {
    use super::*;
    use crate::applayer::dns::{labels, DnsCounters, DnsState};
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

    fn parse(dir: Direction, msg: &[u8]) -> (DnsState, u64) {
        let mut state = DnsState::default();
        let id = state.parse_udp(dir, msg, &mut DnsCounters::default()).expect("message parses");
        (state, id)
    }

    #[test]
    fn request_buffers() {
        let (state, id) = parse(Direction::ToServer, &request(7, 4, &["a.example", "b.example"]));
        let tx = state.tx(id).expect("tx");
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
        let (state, id) = parse(Direction::ToClient, &response(7, "www.oisf.net", "web.oisf.net", "ns1.dns.example"));
        let tx = state.tx(id).expect("tx");
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
}

//! The `dns` object of eve records, as Suricata 8 writes it: the "version 3" layout (one
//! record per message, request or response) and the older "version 2" one (one record per
//! question of a request, one per response), with the `types:` and `formats:` options of
//! Suricata's `dns:` eve-log entry ([`DnsRecordFilter`]).

use super::{DnsName, DnsRecord, DnsTransaction, RData, RRTYPE_NULL};
use crate::record::RecordWriter;

/// EDNS0's OPT pseudo-record: in the additional section, logged only when it has options.
const RRTYPE_OPT: u16 = 41;

/// Which messages a `dns` record is written for and how its answers look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsRecordFilter {
    /// Question types logged (Suricata's `types:` list); `None` logs all. A message is
    /// logged when one of its questions has a listed type, and only those questions are.
    pub rrtypes: Option<Vec<u16>>,
    /// `formats: [detailed]`: the `answers` list of answer objects.
    pub detailed: bool,
    /// `formats: [grouped]`: the `grouped` object, answer data by record type.
    pub grouped: bool,
}

impl Default for DnsRecordFilter {
    /// Suricata's defaults: every type, both answer formats.
    fn default() -> Self {
        DnsRecordFilter { rrtypes: None, detailed: true, grouped: true }
    }
}

impl DnsRecordFilter {
    /// What an alert's `dns` object holds (Suricata's alert logger): everything, detailed
    /// answers only.
    pub const ALERT: DnsRecordFilter = DnsRecordFilter { rrtypes: None, detailed: true, grouped: false };

    pub fn logs_rrtype(&self, rrtype: u16) -> bool {
        self.rrtypes.as_ref().is_none_or(|types| types.contains(&rrtype))
    }

    /// The record type of a `types:` entry, by its mnemonic (any case); `None` when the
    /// name is not one of the types Suricata can filter on.
    pub fn rrtype_by_name(name: &str) -> Option<u16> {
        (0..=u16::from(u8::MAX) + 1).find(|&t| {
            let known = rrtype_name(t);
            !known.starts_with(|c: char| c.is_ascii_digit()) && known.eq_ignore_ascii_case(name)
        })
    }
}

impl DnsTransaction {
    /// Writes the fields of the `dns` object of an alert (Suricata 8 "version 3" layout,
    /// detailed answers) into the open object of `w`.
    pub fn write_record(&self, w: &mut dyn RecordWriter) {
        self.write_record_with(w, &DnsRecordFilter::ALERT);
    }

    /// Whether a record of this message passes `filter`: one of its questions has a
    /// logged type (a message without questions is never logged, as Suricata's).
    pub fn is_logged(&self, filter: &DnsRecordFilter) -> bool {
        self.message.questions.iter().any(|q| filter.logs_rrtype(q.rrtype))
    }

    /// The "version 3" `dns` object of this message under `filter`.
    pub fn write_record_with(&self, w: &mut dyn RecordWriter, filter: &DnsRecordFilter) {
        let h = &self.message.header;
        w.u64("version", 3);
        w.str("type", if self.is_request() { "request" } else { "response" });
        w.u64("tx_id", self.tx_id);
        w.u64("id", h.id.into());
        self.write_flags(w);
        w.u64("opcode", h.opcode().into());
        w.str("rcode", &rcode_name(h.rcode()));
        if !self.message.questions.is_empty() {
            w.open_list("queries");
            for q in self.message.questions.iter().filter(|q| filter.logs_rrtype(q.rrtype)) {
                w.open_item();
                w.bytes("rrname", &q.name.bytes);
                w.str("rrtype", &rrtype_name(q.rrtype));
                write_truncated(w, "rrname_truncated", &q.name);
                w.close();
            }
            w.close_list();
        }
        self.write_answer_sections(w, filter);
    }

    /// The "version 2" object of question `index` of a request (`type: query`); false
    /// (nothing written) past the last question or when its type is not logged.
    pub fn write_v2_query(&self, w: &mut dyn RecordWriter, index: usize, filter: &DnsRecordFilter) -> bool {
        let Some(q) = self.message.questions.get(index) else { return false };
        if !filter.logs_rrtype(q.rrtype) {
            return false;
        }
        let h = &self.message.header;
        w.u64("version", 2);
        w.str("type", "query");
        w.u64("id", h.id.into());
        w.bytes("rrname", &q.name.bytes);
        write_truncated(w, "rrname_truncated", &q.name);
        w.str("rrtype", &rrtype_name(q.rrtype));
        w.u64("tx_id", self.tx_id);
        if h.z() {
            w.bool("z", true);
        }
        w.u64("opcode", h.opcode().into());
        true
    }

    /// The "version 2" object of a response (`type: answer`): the first question's name
    /// and type at the top, then the answer sections as in version 3.
    pub fn write_v2_answer(&self, w: &mut dyn RecordWriter, filter: &DnsRecordFilter) {
        let h = &self.message.header;
        w.u64("version", 2);
        w.str("type", "answer");
        w.u64("id", h.id.into());
        self.write_flags(w);
        w.u64("opcode", h.opcode().into());
        if let Some(q) = self.message.questions.first() {
            w.bytes("rrname", &q.name.bytes);
            write_truncated(w, "rrname_truncated", &q.name);
            w.str("rrtype", &rrtype_name(q.rrtype));
        }
        w.str("rcode", &rcode_name(h.rcode()));
        self.write_answer_sections(w, filter);
    }

    /// `flags` as hex, then one `true` field per header flag set (Suricata's order).
    fn write_flags(&self, w: &mut dyn RecordWriter) {
        let h = &self.message.header;
        let mut hex = [0u8; 4];
        w.str("flags", hex_u16(h.flags, &mut hex));
        for (set, key) in [(h.qr(), "qr"), (h.aa(), "aa"), (h.tc(), "tc"), (h.rd(), "rd"), (h.ra(), "ra"), (h.z(), "z")]
        {
            if set {
                w.bool(key, true);
            }
        }
    }

    /// `answers` (detailed) and `grouped`, `authorities`, `additionals` (OPT records
    /// without options left out).
    fn write_answer_sections(&self, w: &mut dyn RecordWriter, filter: &DnsRecordFilter) {
        let answers = &self.message.answers;
        if !answers.is_empty() {
            if filter.detailed {
                w.open_list("answers");
                answers.iter().for_each(|rec| write_answer(w, rec));
                w.close_list();
            }
            if filter.grouped {
                write_grouped(w, answers);
            }
        }
        if !self.message.authorities.is_empty() {
            w.open_list("authorities");
            self.message.authorities.iter().for_each(|rec| write_answer(w, rec));
            w.close_list();
        }
        let is_empty_opt =
            |rec: &&DnsRecord| rec.rrtype == RRTYPE_OPT && matches!(&rec.rdata, RData::Raw(r) if r.is_empty());
        let mut additionals = self.message.additionals.iter().filter(|rec| !is_empty_opt(rec)).peekable();
        if additionals.peek().is_some() {
            w.open_list("additionals");
            additionals.for_each(|rec| write_answer(w, rec));
            w.close_list();
        }
    }
}

/// `key: true` when `name` was cut at the name length limit.
fn write_truncated(w: &mut dyn RecordWriter, key: &str, name: &DnsName) {
    if name.truncated {
        w.bool(key, true);
    }
}

/// Lower-case hex of `v` without leading zeros, as Suricata's `flags`.
fn hex_u16(v: u16, buf: &mut [u8; 4]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (4 - v.leading_zeros() as usize / 4).max(1);
    for (i, slot) in buf[..digits].iter_mut().enumerate() {
        *slot = HEX[usize::from(v >> (4 * (digits - 1 - i)) & 0xf)];
    }
    std::str::from_utf8(&buf[..digits]).unwrap_or("0")
}

/// The `grouped` object: for each record type among the answers (in order of first
/// appearance), the list of their data. Types whose data Suricata does not group (raw
/// data other than NULL) are left out.
fn write_grouped(w: &mut dyn RecordWriter, answers: &[DnsRecord]) {
    let groupable = |rec: &DnsRecord| match &rec.rdata {
        RData::Raw(_) => rec.rrtype == RRTYPE_NULL,
        _ => true,
    };
    let mut types: Vec<u16> = Vec::new();
    for rec in answers.iter().filter(|r| groupable(r)) {
        if !types.contains(&rec.rrtype) {
            types.push(rec.rrtype);
        }
    }
    w.open("grouped");
    for t in types {
        w.open_list(&rrtype_name(t));
        for rec in answers.iter().filter(|r| r.rrtype == t && groupable(r)) {
            match &rec.rdata {
                RData::A(a) => w.item_str(&format_ipv4(a)),
                RData::Aaaa(a) => w.item_str(&format_ipv6_full(a)),
                RData::Name(n) | RData::Mx { exchange: n, .. } => w.item_bytes(&n.bytes),
                RData::Txt(strings) => strings.iter().for_each(|s| w.item_bytes(s)),
                RData::Raw(raw) => w.item_bytes(raw),
                RData::Soa(soa) => {
                    w.open_item();
                    write_soa_fields(w, soa);
                    w.close();
                }
                RData::Srv(srv) => {
                    w.open_item();
                    write_srv_fields(w, srv);
                    w.close();
                }
            }
        }
        w.close_list();
    }
    w.close();
}

fn write_soa_fields(w: &mut dyn RecordWriter, soa: &super::Soa) {
    w.bytes("mname", &soa.mname.bytes);
    write_truncated(w, "mname_truncated", &soa.mname);
    w.bytes("rname", &soa.rname.bytes);
    write_truncated(w, "rname_truncated", &soa.rname);
    w.u64("serial", soa.serial.into());
    w.u64("refresh", soa.refresh.into());
    w.u64("retry", soa.retry.into());
    w.u64("expire", soa.expire.into());
    w.u64("minimum", soa.minimum.into());
}

fn write_srv_fields(w: &mut dyn RecordWriter, srv: &super::Srv) {
    w.u64("priority", srv.priority.into());
    w.u64("weight", srv.weight.into());
    w.u64("port", srv.port.into());
    w.bytes("name", &srv.target.bytes);
}

/// One eve answer object per record; a TXT record gives one object per string, as Suricata.
fn write_answer(w: &mut dyn RecordWriter, rec: &DnsRecord) {
    let open = |w: &mut dyn RecordWriter| {
        w.open_item();
        w.bytes("rrname", &rec.name.bytes);
        write_truncated(w, "rrname_truncated", &rec.name);
        w.str("rrtype", &rrtype_name(rec.rrtype));
        w.u64("ttl", rec.ttl.into());
    };
    if let RData::Txt(strings) = &rec.rdata {
        for s in strings {
            open(w);
            w.bytes("rdata", s);
            w.close();
        }
        return;
    }
    open(w);
    match &rec.rdata {
        RData::A(a) => w.str("rdata", &format_ipv4(a)),
        RData::Aaaa(a) => w.str("rdata", &format_ipv6_full(a)),
        RData::Name(n) | RData::Mx { exchange: n, .. } => {
            w.bytes("rdata", &n.bytes);
            write_truncated(w, "rdata_truncated", n);
        }
        RData::Soa(soa) => {
            w.open("soa");
            write_soa_fields(w, soa);
            w.close();
        }
        RData::Srv(srv) => {
            w.open("srv");
            write_srv_fields(w, srv);
            w.close();
        }
        RData::Raw(raw) if rec.rrtype == RRTYPE_NULL => w.bytes("rdata", raw),
        RData::Raw(raw) if rec.rrtype == RRTYPE_OPT => write_opt(w, raw),
        RData::Txt(_) | RData::Raw(_) => {}
    }
    w.close();
}

/// EDNS0 options of an OPT record: `opt: [{code, data}]`, data in hex; a truncated option
/// ends the list.
fn write_opt(w: &mut dyn RecordWriter, mut raw: &[u8]) {
    w.open_list("opt");
    while let [c0, c1, l0, l1, rest @ ..] = raw {
        let len = usize::from(u16::from_be_bytes([*l0, *l1]));
        let Some(data) = rest.get(..len) else { break };
        w.open_item();
        w.u64("code", u16::from_be_bytes([*c0, *c1]).into());
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        w.str("data", &hex);
        w.close();
        raw = &rest[len..];
    }
    w.close_list();
}

fn format_ipv4(a: &[u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// IPv6 as Suricata's DNS log prints it: eight groups of four hex digits, no compression.
fn format_ipv6_full(a: &[u8; 16]) -> String {
    let groups: Vec<String> = a.chunks(2).map(|g| format!("{:02x}{:02x}", g[0], g[1])).collect();
    groups.join(":")
}

/// Record type mnemonic as Suricata logs it; unknown types as their number.
pub fn rrtype_name(rrtype: u16) -> std::borrow::Cow<'static, str> {
    let name = match rrtype {
        1 => "A",
        2 => "NS",
        3 => "MD",
        4 => "MF",
        5 => "CNAME",
        6 => "SOA",
        7 => "MB",
        8 => "MG",
        9 => "MR",
        10 => "NULL",
        11 => "WKS",
        12 => "PTR",
        13 => "HINFO",
        14 => "MINFO",
        15 => "MX",
        16 => "TXT",
        17 => "RP",
        18 => "AFSDB",
        19 => "X25",
        20 => "ISDN",
        21 => "RT",
        22 => "NSAP",
        23 => "NSAPPTR",
        24 => "SIG",
        25 => "KEY",
        26 => "PX",
        27 => "GPOS",
        28 => "AAAA",
        29 => "LOC",
        30 => "NXT",
        33 => "SRV",
        34 => "ATMA",
        35 => "NAPTR",
        36 => "KX",
        37 => "CERT",
        38 => "A6",
        39 => "DNAME",
        41 => "OPT",
        42 => "APL",
        43 => "DS",
        44 => "SSHFP",
        45 => "IPSECKEY",
        46 => "RRSIG",
        47 => "NSEC",
        48 => "DNSKEY",
        49 => "DHCID",
        50 => "NSEC3",
        51 => "NSEC3PARAM",
        52 => "TLSA",
        55 => "HIP",
        59 => "CDS",
        60 => "CDNSKEY",
        64 => "SVCB",
        65 => "HTTPS",
        99 => "SPF",
        249 => "TKEY",
        250 => "TSIG",
        253 => "MAILA",
        255 => "ANY",
        256 => "URI",
        _ => return rrtype.to_string().into(),
    };
    name.into()
}

/// Response code name as Suricata logs it (the 4-bit header rcode).
pub fn rcode_name(rcode: u8) -> std::borrow::Cow<'static, str> {
    let name = match rcode {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        _ => return rcode.to_string().into(),
    };
    name.into()
}

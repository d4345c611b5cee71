//! The `dns` object of eve records, as Suricata 8 writes it.

use super::{DnsRecord, DnsTransaction, RData, RRTYPE_NULL};
use crate::record::RecordWriter;

impl DnsTransaction {
    /// Writes the fields of the `dns` object of an eve record (Suricata 8 "version 3"
    /// layout) into the open object of `w`.
    pub fn write_record(&self, w: &mut dyn RecordWriter) {
        let h = &self.message.header;
        w.u64("version", 3);
        w.str("type", if self.is_request() { "request" } else { "response" });
        w.u64("tx_id", self.tx_id);
        w.u64("id", h.id.into());
        w.str("flags", &format!("{:x}", h.flags));
        for (set, key) in [(h.qr(), "qr"), (h.aa(), "aa"), (h.tc(), "tc"), (h.rd(), "rd"), (h.ra(), "ra"), (h.z(), "z")]
        {
            if set {
                w.bool(key, true);
            }
        }
        w.u64("opcode", h.opcode().into());
        w.str("rcode", &rcode_name(h.rcode()));
        if !self.message.questions.is_empty() {
            w.open_list("queries");
            for q in &self.message.questions {
                w.open_item();
                w.bytes("rrname", &q.name.bytes);
                w.str("rrtype", &rrtype_name(q.rrtype));
                w.close();
            }
            w.close_list();
        }
        for (key, records) in [
            ("answers", &self.message.answers),
            ("authorities", &self.message.authorities),
            ("additionals", &self.message.additionals),
        ] {
            if records.is_empty() {
                continue;
            }
            w.open_list(key);
            for rec in records.iter() {
                write_answer(w, rec);
            }
            w.close_list();
        }
    }
}

/// One eve answer object per record; a TXT record gives one object per string, as Suricata.
fn write_answer(w: &mut dyn RecordWriter, rec: &DnsRecord) {
    let open = |w: &mut dyn RecordWriter| {
        w.open_item();
        w.bytes("rrname", &rec.name.bytes);
        w.str("rrtype", &rrtype_name(rec.rrtype));
        w.u64("ttl", rec.ttl.into());
    };
    if let RData::Txt(strings) = &rec.rdata {
        if !strings.is_empty() {
            for s in strings {
                open(w);
                w.bytes("rdata", s);
                w.close();
            }
            return;
        }
    }
    open(w);
    match &rec.rdata {
        RData::A(a) => w.str("rdata", &format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])),
        RData::Aaaa(a) => w.str("rdata", &format_ipv6_full(a)),
        RData::Name(n) | RData::Mx { exchange: n, .. } => w.bytes("rdata", &n.bytes),
        RData::Soa(soa) => {
            w.open("soa");
            w.bytes("mname", &soa.mname.bytes);
            w.bytes("rname", &soa.rname.bytes);
            w.u64("serial", soa.serial.into());
            w.u64("refresh", soa.refresh.into());
            w.u64("retry", soa.retry.into());
            w.u64("expire", soa.expire.into());
            w.u64("minimum", soa.minimum.into());
            w.close();
        }
        RData::Srv(srv) => {
            w.open("srv");
            w.u64("priority", srv.priority.into());
            w.u64("weight", srv.weight.into());
            w.u64("port", srv.port.into());
            w.bytes("name", &srv.target.bytes);
            w.close();
        }
        RData::Raw(raw) if rec.rrtype == RRTYPE_NULL => w.bytes("rdata", raw),
        RData::Txt(_) | RData::Raw(_) => {}
    }
    w.close();
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

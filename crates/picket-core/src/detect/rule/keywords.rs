//! The table of rule keywords the parser accepts, with a one-line summary and an example each.
//!
//! [`OptionParser`](super::options::OptionParser) refuses any keyword that is neither in
//! [`KEYWORDS`] nor an inspection buffer of [`BUFFERS`](super::buffers::BUFFERS) (as
//! unsupported when it is one of Suricata's, [`SURICATA_ONLY_KEYWORDS`], else as unknown), so
//! a keyword added to a parser arm without a line here cannot load; and a test parses every
//! entry's example, so a line here without a parser arm fails the tests. `picket --list-keywords` prints this table (plus the buffers):
//! it cannot drift from what the parser does.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::buffers::{content_modifier_buffer, sticky_buffer, BufferDef, BUFFERS};
use crate::flow::hash::FxBuildHasher;

/// What a keyword is about, for grouping in `--list-keywords`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeywordFamily {
    /// Rule metadata: `msg`, `sid`, `classtype`...
    Meta,
    /// Payload inspection: `content`, `pcre`, `byte_test`...
    Payload,
    /// Modifies the content before it: `nocase`, `depth`, `fast_pattern`...
    ContentModifier,
    /// IP, TCP, UDP and ICMP header fields, packet size, checksums.
    Packet,
    /// The flow and its counters: `flow`, `stream_size`, `flow.pkts`.
    Flow,
    /// Application-layer facts: `app-layer-protocol`, `dns.opcode`, `tls.version`...
    AppLayer,
    /// State across packets: `flowbits`, `xbits`, `threshold`...
    State,
    /// Selects the buffer the following payload keywords inspect (sticky buffer).
    StickyBuffer,
    /// Legacy modifier putting the content before it in a buffer (`http_uri`).
    BufferModifier,
    /// Transforms the current buffer before inspection (`to_lowercase`...).
    Transform,
}

impl KeywordFamily {
    pub fn name(self) -> &'static str {
        match self {
            KeywordFamily::Meta => "meta",
            KeywordFamily::Payload => "payload",
            KeywordFamily::ContentModifier => "content modifier",
            KeywordFamily::Packet => "packet",
            KeywordFamily::Flow => "flow",
            KeywordFamily::AppLayer => "app-layer",
            KeywordFamily::State => "state",
            KeywordFamily::StickyBuffer => "sticky buffer",
            KeywordFamily::BufferModifier => "buffer modifier",
            KeywordFamily::Transform => "transform",
        }
    }
}

/// One keyword of [`KEYWORDS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeywordDoc {
    pub name: &'static str,
    pub family: KeywordFamily,
    /// One line: what it matches or does.
    pub summary: &'static str,
    /// Options as written in a rule using it (a test parses each one).
    pub example: &'static str,
}

macro_rules! kw {
    ($name:expr, $family:ident, $summary:expr, $example:expr) => {
        KeywordDoc { name: $name, family: KeywordFamily::$family, summary: $summary, example: $example }
    };
}

/// Every keyword the parser accepts other than the inspection buffers, sorted by name (a test
/// checks the order, which `--list-keywords` keeps; [`keyword_doc`] finds an entry by hash).
pub static KEYWORDS: &[KeywordDoc] = &[
    kw!(
        "absent",
        AppLayer,
        "the sticky buffer does not exist (or_else: or the keywords after it match)",
        "http.referer; absent;"
    ),
    kw!("ack", Packet, "TCP acknowledgement number equals N", "ack:0;"),
    kw!("alert", Meta, "a pass rule's matches are logged as alerts too", "alert;"),
    kw!(
        "app-layer-event",
        AppLayer,
        "the flow's parser raised this app-layer event on the transaction",
        "app-layer-event:dns.z_flag_set;"
    ),
    kw!(
        "app-layer-protocol",
        AppLayer,
        "the flow's detected application protocol is (not) P",
        "app-layer-protocol:http;"
    ),
    kw!(
        "base64_decode",
        Payload,
        "decode base64 from the cursor into base64_data",
        "content:\"x\"; base64_decode:bytes 10,offset 0,relative;"
    ),
    kw!("bsize", AppLayer, "length of the current sticky buffer compares to N", "http.uri; bsize:>10;"),
    kw!("bypass", State, "a match stops inspecting the rest of the flow", "bypass;"),
    kw!("byte_extract", Payload, "read a number from the payload into a variable", "byte_extract:2,0,len;"),
    kw!("byte_jump", Payload, "read a number from the payload and move the cursor by it", "byte_jump:2,0;"),
    kw!(
        "byte_math",
        Payload,
        "compute with a number read from the payload into a variable",
        "byte_math:bytes 2,offset 0,oper +,rvalue 1,result r;"
    ),
    kw!("byte_test", Payload, "compare a number read from the payload", "byte_test:2,>,100,0;"),
    kw!("classtype", Meta, "class of the alert (classification.config)", "classtype:trojan-activity;"),
    kw!(
        "compress_whitespace",
        Transform,
        "collapse runs of whitespace in the buffer",
        "http.uri; compress_whitespace;"
    ),
    kw!("content", Payload, "the buffer contains these bytes (text, |hex|, ! negates)", "content:\"GET |20|\";"),
    kw!("decode-event", Packet, "the decoder raised this event on the packet", "decode-event:ipv4.trunc_pkt;"),
    kw!("depth", ContentModifier, "the content starts within the first N bytes", "content:\"abc\"; depth:10;"),
    kw!(
        "detection_filter",
        State,
        "alert only after N matches in S seconds per source or destination",
        "detection_filter:track by_src,count 5,seconds 60;"
    ),
    kw!(
        "distance",
        ContentModifier,
        "the content starts N bytes after the previous match",
        "content:\"a\"; content:\"b\"; distance:1;"
    ),
    kw!("dns.opcode", AppLayer, "DNS header opcode compares to N", "dns.opcode:0;"),
    kw!("dns.rcode", AppLayer, "DNS response code compares to N", "dns.rcode:3;"),
    kw!("dns.rrtype", AppLayer, "a DNS query or answer record type compares to N", "dns.rrtype:1;"),
    kw!("dotprefix", Transform, "prepend a dot to the buffer (domain suffix matching)", "dns.query; dotprefix;"),
    kw!("dsize", Packet, "payload size compares to N (or N<>M)", "dsize:>100;"),
    kw!("endswith", ContentModifier, "the content ends the buffer", "content:\"abc\"; endswith;"),
    kw!(
        "entropy",
        Payload,
        "Shannon entropy of the current buffer compares to a float",
        "file.data; entropy: value > 7;"
    ),
    kw!(
        "fast_pattern",
        ContentModifier,
        "use this content (or a chop of it) as the prefilter pattern",
        "content:\"abcd\"; fast_pattern;"
    ),
    kw!("flags", Packet, "TCP flags ([!+*]FSRPAUCE, optional mask to ignore)", "flags:S,CE;"),
    kw!("flow", Flow, "flow direction and state (established, to_server, ...)", "flow:established,to_server;"),
    kw!("flow.age", Flow, "seconds from the flow's first packet to this one compare to N", "flow.age:>20;"),
    kw!("flow.bytes", Flow, "bytes of the flow in a direction compare to N", "flow.bytes:toserver,>1000;"),
    kw!(
        "flow.bytes_toclient",
        Flow,
        "bytes sent to the client compare to N (older spelling)",
        "flow.bytes_toclient:>1000;"
    ),
    kw!(
        "flow.bytes_toserver",
        Flow,
        "bytes sent to the server compare to N (older spelling)",
        "flow.bytes_toserver:>1000;"
    ),
    kw!("flow.pkts", Flow, "packets of the flow in a direction compare to N", "flow.pkts:either,>10;"),
    kw!(
        "flow.pkts_toclient",
        Flow,
        "packets sent to the client compare to N (older spelling)",
        "flow.pkts_toclient:>10;"
    ),
    kw!(
        "flow.pkts_toserver",
        Flow,
        "packets sent to the server compare to N (older spelling)",
        "flow.pkts_toserver:>10;"
    ),
    kw!("flowbits", State, "set, test or clear named bits on the flow", "flowbits:set,seen;"),
    kw!("flowint", State, "integer variables on the flow: set, add, compare", "flowint:count,+,1;"),
    kw!("fragbits", Packet, "IP fragment bits (M, D, R) with [!+*]", "fragbits:M;"),
    kw!("fragoffset", Packet, "IP fragment offset compares to N", "fragoffset:0;"),
    kw!("from_base64", Transform, "decode the buffer from base64", "http.uri; from_base64;"),
    kw!("gid", Meta, "generator id (default 1)", "gid:1;"),
    kw!("gunzip", Transform, "gunzip the buffer (max-size bounds the output)", "file.data; gunzip;"),
    kw!(
        "header_lowercase",
        Transform,
        "lowercase the header names of an HTTP header buffer",
        "http.header; header_lowercase;"
    ),
    kw!("hostbits", State, "set, test or clear named bits on a host", "hostbits:set,seen,src;"),
    kw!("icmp_id", Packet, "ICMP echo identifier equals N", "icmp_id:0;"),
    kw!("icmp_seq", Packet, "ICMP echo sequence number equals N", "icmp_seq:0;"),
    kw!("icmpv4-csum", Packet, "ICMPv4 checksum is valid or invalid", "icmpv4-csum:invalid;"),
    kw!("icmpv6-csum", Packet, "ICMPv6 checksum is valid or invalid", "icmpv6-csum:invalid;"),
    kw!("icode", Packet, "ICMP code compares to N", "icode:0;"),
    kw!("id", Packet, "IPv4 identification equals N", "id:1;"),
    kw!("ip_proto", Packet, "IP protocol number or name compares to P", "ip_proto:tcp;"),
    kw!("ipopts", Packet, "the IPv4 header carries this option (rr, ts, lsrr, any...)", "ipopts:rr;"),
    kw!("ipv4-csum", Packet, "IPv4 header checksum is valid or invalid", "ipv4-csum:invalid;"),
    kw!("isdataat", Payload, "the buffer has data at offset N (relative to the cursor)", "isdataat:10;"),
    kw!("itype", Packet, "ICMP type compares to N", "itype:8;"),
    kw!("metadata", Meta, "key value pairs carried into eve alerts", "metadata:created_at 2024_01_01;"),
    kw!("msg", Meta, "the alert's message", "msg:\"hello\";"),
    kw!("noalert", State, "match without alerting (flowbits set-up rules)", "noalert;"),
    kw!("nocase", ContentModifier, "the content matches ignoring ASCII case", "content:\"abc\"; nocase;"),
    kw!("offset", ContentModifier, "the content starts at or after byte N", "content:\"abc\"; offset:2;"),
    kw!("pcre", Payload, "Perl-compatible regular expression on the buffer", "pcre:\"/ab+c/i\";"),
    kw!(
        "pcre_limit",
        Payload,
        "picket: the pcre before it gets its own PCRE2 match limit [, depth limit]",
        "pcre:\"/ab+c/\"; pcre_limit:10000,2000;"
    ),
    kw!("pcrexform", Transform, "replace the buffer by the regex's first capture", "http.uri; pcrexform:\"a(.*)\";"),
    kw!(
        "pkt_data",
        Payload,
        "following keywords inspect the packet/stream payload again",
        "http.uri; content:\"a\"; pkt_data; content:\"b\";"
    ),
    kw!("prefilter", ContentModifier, "use this keyword as the rule's prefilter", "content:\"abc\"; prefilter;"),
    kw!("priority", Meta, "alert priority 1 (high) to 255, overriding the classtype's", "priority:1;"),
    kw!("rawbytes", ContentModifier, "accepted for Snort compatibility; no effect", "content:\"abc\"; rawbytes;"),
    kw!("reference", Meta, "external reference (system,id)", "reference:url,example.com;"),
    kw!("rev", Meta, "revision of the rule", "rev:2;"),
    kw!("seq", Packet, "TCP sequence number equals N", "seq:0;"),
    kw!("sid", Meta, "signature id (required, not 0)", "sid:1;"),
    kw!("startswith", ContentModifier, "the content starts the buffer", "content:\"abc\"; startswith;"),
    kw!("stream_size", Flow, "bytes seen on the stream's side(s) compare to N", "stream_size:client,>,100;"),
    kw!(
        "strip_pseudo_headers",
        Transform,
        "drop HTTP/2 pseudo headers from the header buffer",
        "http.header; strip_pseudo_headers;"
    ),
    kw!("strip_whitespace", Transform, "remove all whitespace from the buffer", "http.uri; strip_whitespace;"),
    kw!("subslice", Transform, "keep a slice of the buffer (offset[,length])", "http.uri; subslice:1,4;"),
    kw!("tag", State, "log further packets of the session or host", "tag:session,10,packets;"),
    kw!("target", Meta, "which side of the alert is the target (src_ip, dest_ip)", "target:dest_ip;"),
    kw!("tcp.flags", Packet, "TCP flags (Suricata 8 name of flags)", "tcp.flags:S;"),
    kw!("tcp.mss", Packet, "TCP MSS option compares to N", "tcp.mss:<536;"),
    kw!("tcpv4-csum", Packet, "TCP checksum over IPv4 is valid or invalid", "tcpv4-csum:invalid;"),
    kw!("tcpv6-csum", Packet, "TCP checksum over IPv6 is valid or invalid", "tcpv6-csum:invalid;"),
    kw!(
        "threshold",
        State,
        "limit, threshold or both over N matches in S seconds",
        "threshold:type limit,track by_src,count 1,seconds 60;"
    ),
    kw!(
        "tls.cert_chain_len",
        AppLayer,
        "number of certificates in the TLS chain compares to N",
        "tls.cert_chain_len:>3;"
    ),
    kw!(
        "tls.fingerprint",
        AppLayer,
        "TLS certificate SHA-1 fingerprint contains the text (legacy)",
        "tls.fingerprint:\"4a:a3\";"
    ),
    kw!("tls.issuerdn", AppLayer, "TLS certificate issuer contains the text (legacy)", "tls.issuerdn:\"CN=x\";"),
    kw!("tls.subject", AppLayer, "TLS certificate subject contains the text (legacy)", "tls.subject:\"CN=x\";"),
    kw!("tls.version", AppLayer, "TLS version (1.0 to 1.3, ssl3, or 0x hex)", "tls.version:1.2;"),
    kw!(
        "tls_cert_notafter",
        AppLayer,
        "TLS certificate expiry date compares to DATE",
        "tls_cert_notafter:<2020-01-01;"
    ),
    kw!(
        "tls_cert_notbefore",
        AppLayer,
        "TLS certificate start date compares to DATE",
        "tls_cert_notbefore:>2030-01-01;"
    ),
    kw!("to_lowercase", Transform, "lowercase the buffer", "http.uri; to_lowercase;"),
    kw!("to_md5", Transform, "replace the buffer by its MD5 digest", "http.uri; to_md5;"),
    kw!("to_sha1", Transform, "replace the buffer by its SHA-1 digest", "http.uri; to_sha1;"),
    kw!("to_sha256", Transform, "replace the buffer by its SHA-256 digest", "http.uri; to_sha256;"),
    kw!("to_uppercase", Transform, "uppercase the buffer", "http.uri; to_uppercase;"),
    kw!("tos", Packet, "IPv4 type of service equals N", "tos:8;"),
    kw!("ttl", Packet, "IP TTL / hop limit compares to N", "ttl:<5;"),
    kw!("udpv4-csum", Packet, "UDP checksum over IPv4 is valid or invalid", "udpv4-csum:invalid;"),
    kw!("udpv6-csum", Packet, "UDP checksum over IPv6 is valid or invalid", "udpv6-csum:invalid;"),
    kw!("uricontent", Payload, "content in http.uri (legacy spelling)", "uricontent:\"/x\";"),
    kw!("urilen", AppLayer, "length of the (normalized or raw) URI compares to N", "urilen:>100;"),
    kw!("url_decode", Transform, "percent-decode the buffer ('+' becomes a space)", "http.uri; url_decode;"),
    kw!("vlan.id", Packet, "a VLAN id (at a layer, any or all) compares to N", "vlan.id:100;"),
    kw!("vlan.layers", Packet, "number of VLAN tags compares to N", "vlan.layers:2;"),
    kw!("window", Packet, "TCP window equals (!) N", "window:1024;"),
    kw!(
        "within",
        ContentModifier,
        "the content ends within N bytes after the previous match",
        "content:\"a\"; content:\"b\"; within:5;"
    ),
    kw!("xbits", State, "set, test or clear named bits on an IP pair or host", "xbits:set,seen,track ip_pair;"),
    kw!("xor", Transform, "xor the buffer with a hex key", "http.uri; xor:\"0d0ac8ff\";"),
    kw!("zlib_deflate", Transform, "inflate a zlib stream in the buffer", "file.data; zlib_deflate;"),
];

/// [`KEYWORDS`] by name, built once: every option of every rule is looked up here.
static KEYWORD_BY_NAME: LazyLock<HashMap<&'static str, &'static KeywordDoc, FxBuildHasher>> =
    LazyLock::new(|| KEYWORDS.iter().map(|k| (k.name, k)).collect());

/// The entry of a non-buffer keyword.
pub fn keyword_doc(name: &str) -> Option<&'static KeywordDoc> {
    KEYWORD_BY_NAME.get(name).copied()
}

/// Whether the parser accepts `name`: a keyword of [`KEYWORDS`], a sticky buffer or a legacy
/// buffer modifier.
pub fn is_known_keyword(name: &str) -> bool {
    keyword_doc(name).is_some() || sticky_buffer(name).is_some() || content_modifier_buffer(name).is_some()
}

/// Suricata keywords (and sticky buffers) that picket does not implement yet, sorted by byte
/// value (searched by bisection). A rule using one of them is valid Suricata: it is skipped and
/// counted under the keyword ("unsupported"), where a keyword in neither this list nor picket's
/// fails the rule ("unknown rule keyword", as in Suricata). A test checks the list stays sorted
/// and disjoint from what picket implements: implementing a keyword means removing it here.
pub static SURICATA_ONLY_KEYWORDS: &[&str] = &[
    "app-layer-state",
    "asn1",
    "bittorrent-dht.nodes",
    "cip_service",
    "config",
    "datarep",
    "dataset",
    "dce_iface",
    "dce_opnum",
    "dce_stub_data",
    "dcerpc.iface",
    "dcerpc.opnum",
    "dcerpc.stub_data",
    "dhcp.leasetime",
    "dhcp.rebinding_time",
    "dhcp.renewal_time",
    "dnp3.data",
    "dnp3.func",
    "dnp3.ind",
    "dnp3.obj",
    "dnp3_data",
    "dnp3_func",
    "dnp3_ind",
    "dnp3_obj",
    "dns.additionals.rrname",
    "dns.authorities.rrname",
    "domain",
    "email.cc",
    "email.date",
    "email.from",
    "email.message_id",
    "email.received",
    "email.subject",
    "email.to",
    "email.url",
    "email.x_mailer",
    "engine-event",
    "enip.capabilities",
    "enip.cip_attribute",
    "enip.cip_class",
    "enip.cip_extendedstatus",
    "enip.cip_instance",
    "enip.cip_status",
    "enip.device_type",
    "enip.identity_status",
    "enip.product_code",
    "enip.product_name",
    "enip.protocol_version",
    "enip.revision",
    "enip.serial",
    "enip.service_name",
    "enip.state",
    "enip.status",
    "enip.vendor_id",
    "enip_command",
    "file.mime",
    "fileext",
    "filemagic",
    "filemd5",
    "filesha1",
    "filesha256",
    "filesize",
    "filestore",
    "frame",
    "ftp.completion_code",
    "ftp.dynamic_port",
    "ftp.mode",
    "ftp.reply",
    "ftp.reply_received",
    "ftpbounce",
    "ftpdata_command",
    "geoip",
    "http2.errorcode",
    "http2.frametype",
    "http2.header",
    "http2.priority",
    "http2.settings",
    "http2.size_update",
    "http2.window",
    "icmpv6.mtu",
    "ike.chosen_sa_attribute",
    "ike.exchtype",
    "ike.init_spi",
    "ike.key_exchange_payload",
    "ike.key_exchange_payload_length",
    "ike.nonce_payload",
    "ike.nonce_payload_length",
    "ike.resp_spi",
    "ike.vendor",
    "iprep",
    "krb5.ticket_encryption",
    "krb5.weak_encryption",
    "krb5_err_code",
    "krb5_msg_type",
    "ldap.request.attribute_type",
    "ldap.request.dn",
    "ldap.request.operation",
    "ldap.responses.attribute_type",
    "ldap.responses.count",
    "ldap.responses.dn",
    "ldap.responses.message",
    "ldap.responses.operation",
    "ldap.responses.result_code",
    "lua",
    "luajit",
    "luaxform",
    "mdns.additionals.rrname",
    "mdns.answers.rrname",
    "mdns.authorities.rrname",
    "mdns.queries.rrname",
    "mdns.response.rrname",
    "modbus",
    "mqtt.connack.session_present",
    "mqtt.connect.clientid",
    "mqtt.connect.flags",
    "mqtt.connect.password",
    "mqtt.connect.protocol_string",
    "mqtt.connect.username",
    "mqtt.connect.willmessage",
    "mqtt.connect.willtopic",
    "mqtt.flags",
    "mqtt.protocol_version",
    "mqtt.publish.message",
    "mqtt.publish.topic",
    "mqtt.qos",
    "mqtt.reason_code",
    "mqtt.subscribe.topic",
    "mqtt.type",
    "mqtt.unsubscribe.topic",
    "nfs.version",
    "nfs_procedure",
    "pgsql.query",
    "pop3.args",
    "pop3.command",
    "pop3.response",
    "quic.cyu.hash",
    "quic.cyu.string",
    "quic.ua",
    "quic.version",
    "replace",
    "requires",
    "rfb.name",
    "rfb.secresult",
    "rfb.sectype",
    "rpc",
    "sameip",
    "sdp.attribute",
    "sdp.bandwidth",
    "sdp.connection_data",
    "sdp.email",
    "sdp.encryption_key",
    "sdp.media.connection_data",
    "sdp.media.encryption_key",
    "sdp.media.media",
    "sdp.media.media_info",
    "sdp.origin",
    "sdp.phone_number",
    "sdp.repeat_time",
    "sdp.session_info",
    "sdp.session_name",
    "sdp.time",
    "sdp.timezone",
    "sdp.uri",
    "sip.content_length",
    "sip.content_type",
    "sip.from",
    "sip.protocol",
    "sip.request_line",
    "sip.response_line",
    "sip.stat_code",
    "sip.stat_msg",
    "sip.to",
    "sip.user_agent",
    "sip.via",
    "smb.ntlmssp_domain",
    "smb.ntlmssp_user",
    "smb.version",
    "snmp.community",
    "snmp.pdu_type",
    "snmp.usm",
    "snmp.version",
    "ssh.protoversion",
    "ssh.softwareversion",
    "ssl_state",
    "ssl_version",
    "stream-event",
    "tcp.wscale",
    "tld",
    "tls.cert_expired",
    "tls.cert_notafter",
    "tls.cert_notbefore",
    "tls.cert_valid",
    "tls.random",
    "tls.random_bytes",
    "tls.random_time",
    "tls.store",
    "tls_cert_expired",
    "tls_cert_valid",
    "websocket.flags",
    "websocket.mask",
    "websocket.opcode",
    "websocket.payload",
];

/// True for a keyword of Suricata that picket does not implement: see [`SURICATA_ONLY_KEYWORDS`].
pub fn is_suricata_only_keyword(name: &str) -> bool {
    SURICATA_ONLY_KEYWORDS.binary_search(&name).is_ok()
}

/// One line of `--list-keywords`: a keyword of [`KEYWORDS`] or a name of a buffer.
#[derive(Clone, Copy, Debug)]
pub enum KeywordEntry {
    Keyword(&'static KeywordDoc),
    /// A sticky buffer keyword (canonical name or alias) of this buffer.
    Sticky {
        name: &'static str,
        buffer: &'static BufferDef,
    },
    /// A legacy content modifier of this buffer.
    Modifier {
        name: &'static str,
        buffer: &'static BufferDef,
    },
}

impl KeywordEntry {
    pub fn name(&self) -> &'static str {
        match self {
            KeywordEntry::Keyword(k) => k.name,
            KeywordEntry::Sticky { name, .. } | KeywordEntry::Modifier { name, .. } => name,
        }
    }

    pub fn family(&self) -> KeywordFamily {
        match self {
            KeywordEntry::Keyword(k) => k.family,
            KeywordEntry::Sticky { .. } => KeywordFamily::StickyBuffer,
            KeywordEntry::Modifier { .. } => KeywordFamily::BufferModifier,
        }
    }

    /// One line for the listing.
    pub fn summary(&self) -> String {
        let proto = |b: &BufferDef| b.app_proto.map(|p| format!(" ({p})")).unwrap_or_default();
        match self {
            KeywordEntry::Keyword(k) => k.summary.to_string(),
            KeywordEntry::Sticky { name, buffer } if *name == buffer.name => {
                format!("following payload keywords inspect the {} buffer{}", buffer.name, proto(buffer))
            }
            KeywordEntry::Sticky { buffer, .. } => format!("older name of the sticky buffer {}", buffer.name),
            KeywordEntry::Modifier { buffer, .. } => {
                format!("the content before it inspects the {} buffer{}", buffer.name, proto(buffer))
            }
        }
    }

    /// Options as written in a rule using it.
    pub fn example(&self) -> String {
        match self {
            KeywordEntry::Keyword(k) => k.example.to_string(),
            KeywordEntry::Sticky { name, .. } => format!("{name}; content:\"x\";"),
            KeywordEntry::Modifier { name, .. } => format!("content:\"x\"; {name};"),
        }
    }
}

/// Every keyword the parser accepts, sorted by name.
pub fn all_keywords() -> Vec<KeywordEntry> {
    let mut all: Vec<KeywordEntry> = KEYWORDS.iter().map(KeywordEntry::Keyword).collect();
    for buffer in BUFFERS {
        all.push(KeywordEntry::Sticky { name: buffer.name, buffer });
        for alias in buffer.sticky_aliases {
            all.push(KeywordEntry::Sticky { name: alias, buffer });
        }
        if let Some(modifier) = buffer.content_modifier {
            all.push(KeywordEntry::Modifier { name: modifier, buffer });
        }
    }
    all.sort_by_key(|e| e.name());
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::rule::{parse_rule, RuleVars};

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in KEYWORDS.windows(2) {
            assert!(pair[0].name < pair[1].name, "KEYWORDS out of order at {} / {}", pair[0].name, pair[1].name);
        }
        let all = all_keywords();
        for pair in all.windows(2) {
            assert_ne!(pair[0].name(), pair[1].name(), "keyword listed twice");
        }
    }

    /// Every listed keyword parses in a rule: the table names nothing the parser lacks.
    #[test]
    fn every_example_parses() {
        let vars = RuleVars::default();
        for entry in all_keywords() {
            let rule = format!("alert http any any -> any any (msg:\"t\"; {} sid:1;)", entry.example());
            let rule = rule.replace("msg:\"t\"; msg:", "msg:");
            let rule = if entry.name() == "sid" { rule.replace(" sid:1;)", ")") } else { rule };
            if let Err(e) = parse_rule(&rule, &vars) {
                panic!("keyword {}: example rule {rule} does not parse: {e}", entry.name());
            }
        }
    }

    /// A keyword of Suricata not in the table is unsupported (skipped); one of neither is
    /// unknown (the rule fails).
    #[test]
    fn suricata_keyword_is_unsupported_other_is_unknown() {
        let vars = RuleVars::default();
        let err = parse_rule("alert tcp any any -> any any (sid:1; luajit:x.lua;)", &vars).unwrap_err();
        assert_eq!(err.unsupported_keyword(), Some("luajit"));
        let err = parse_rule("alert tcp any any -> any any (sid:1; no_such_kw;)", &vars).unwrap_err();
        assert_eq!(err, crate::detect::rule::RuleError::UnknownKeyword { name: "no_such_kw".into() });
        assert!(!is_known_keyword("no_such_kw") && !is_suricata_only_keyword("no_such_kw"));
        assert!(is_known_keyword("http_uri") && is_known_keyword("file_data") && is_known_keyword("content"));
    }

    #[test]
    fn suricata_only_keywords_are_sorted_and_not_implemented() {
        for pair in SURICATA_ONLY_KEYWORDS.windows(2) {
            assert!(pair[0] < pair[1], "SURICATA_ONLY_KEYWORDS out of order at {} / {}", pair[0], pair[1]);
        }
        for name in SURICATA_ONLY_KEYWORDS {
            assert!(!is_known_keyword(name), "{name} is implemented: remove it from SURICATA_ONLY_KEYWORDS");
        }
    }
}

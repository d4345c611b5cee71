//! Tests for the rule parser.

use super::*;

use super::options::*;
use super::vars::{Group, GroupError};
use std::net::IpAddr;

fn vars() -> RuleVars {
    RuleVars::default()
}

fn rule(opts: &str) -> Result<Rule, RuleError> {
    parse_rule(&format!("alert tcp any any -> any any ({opts} sid:1;)"), &vars())
}

fn ok(opts: &str) -> Rule {
    rule(opts).unwrap_or_else(|e| panic!("rule with '{opts}' failed: {e}"))
}

fn invalid(opts: &str) -> String {
    match rule(opts) {
        Err(e) if e.unsupported_keyword().is_none() => e.to_string(),
        other => panic!("expected invalid for '{opts}', got {other:?}"),
    }
}

/// The error of the option in `opts` that makes the rule invalid.
fn option_error(opts: &str) -> OptionError {
    match rule(opts) {
        Err(RuleError::BadOption { error, .. }) => error,
        other => panic!("expected a bad option in '{opts}', got {other:?}"),
    }
}

fn first(opts: &str) -> RuleOption {
    ok(opts).options.into_iter().next().expect("one option")
}

fn content_of(opts: &str) -> Content {
    match first(opts) {
        RuleOption::Content(c) => c,
        other => panic!("expected content, got {other:?}"),
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

// ---------------------------------------------------------------- header

#[test]
fn header_actions_and_protocols() {
    for action in ["alert", "pass", "drop", "reject", "rejectsrc", "rejectdst", "rejectboth"] {
        let r = parse_rule(&format!("{action} ip any any -> any any (sid:1;)"), &vars()).unwrap();
        assert_eq!(r.action().as_str(), action);
    }
    let r = parse_rule("alert http any any -> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.protocol(), Protocol::App("http"));
    let r = parse_rule("alert tcp-pkt any any -> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.protocol(), Protocol::TcpPkt);
    let r = parse_rule("alert ICMPV6 any any -> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.protocol(), Protocol::Icmpv6);
    let r = parse_rule("alert ftp-data any any -> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.protocol(), Protocol::App("ftp-data"));

    let e = parse_rule("alert foo any any -> any any (sid:1;)", &vars()).unwrap_err();
    assert_eq!(e, RuleError::UnknownProtocol { protocol: "foo".into() });
    assert_eq!(e.to_string(), "unknown protocol 'foo'");
    let e = parse_rule("config tcp any any -> any any (sid:1;)", &vars()).unwrap_err();
    assert!(e.to_string().contains("unknown action"));
}

#[test]
fn header_directions() {
    let r = parse_rule("alert ip any any <> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.header.direction, Direction::Both);
    let r = parse_rule("alert ip any any -> any any (sid:1;)", &vars()).unwrap();
    assert_eq!(r.header.direction, Direction::ToDst);
    let e = parse_rule("alert ip any any <- any any (sid:1;)", &vars()).unwrap_err();
    assert!(e.to_string().contains("'<-'"));
    let e = parse_rule("alert ip any any >> any any (sid:1;)", &vars()).unwrap_err();
    assert!(e.to_string().contains("invalid direction"));
    let e = parse_rule("alert ip any any -> any (sid:1;)", &vars()).unwrap_err();
    assert!(e.to_string().contains("6 fields"));
}

#[test]
fn header_addresses_with_variables_and_negation() {
    let r = parse_rule("alert tcp $HOME_NET any -> $EXTERNAL_NET $HTTP_PORTS (sid:1;)", &vars()).unwrap();
    assert!(r.header.src.contains(ip("192.168.1.1")));
    assert!(r.header.src.contains(ip("10.255.0.1")));
    assert!(r.header.src.contains(ip("172.31.255.255")));
    assert!(!r.header.src.contains(ip("172.32.0.0")));
    assert!(!r.header.src.contains(ip("8.8.8.8")));
    assert!(!r.header.src.contains(ip("2001:db8::1")));
    assert!(r.header.dst.contains(ip("8.8.8.8")));
    assert!(r.header.dst.contains(ip("2001:db8::1")), "negation covers the other family too");
    assert!(!r.header.dst.contains(ip("10.1.2.3")));
    assert!(r.header.dst_ports.contains(80));
    assert!(!r.header.dst_ports.contains(81));
    assert!(r.header.src_ports.is_any());
}

#[test]
fn header_nested_negated_groups() {
    let v = vars();
    // 10/8 except 10.1/16, but 10.1.2/24 is back in.
    let set = v.resolve_address("[10.0.0.0/8,![10.1.0.0/16,!10.1.2.0/24]]").unwrap();
    assert!(set.contains(ip("10.0.0.1")));
    assert!(!set.contains(ip("10.1.0.1")));
    assert!(set.contains(ip("10.1.2.200")));
    assert!(!set.contains(ip("11.0.0.1")));
    // Only negations: everything but them.
    let set = v.resolve_address("[!1.2.3.4, !5.6.7.0/24]").unwrap();
    assert!(!set.contains(ip("1.2.3.4")));
    assert!(!set.contains(ip("5.6.7.9")));
    assert!(set.contains(ip("1.2.3.5")));
    assert!(set.contains(ip("::1")));
    // Double negation.
    let set = v.resolve_address("!!1.2.3.4").unwrap();
    assert!(set.contains(ip("1.2.3.4")) && !set.contains(ip("1.2.3.5")));
    // IPv6 CIDR, range and netmask forms.
    let set = v.resolve_address("[2001:db8::/32, 192.168.0.10-192.168.0.20, 172.16.0.0/255.255.0.0]").unwrap();
    assert!(set.contains(ip("2001:db8:ffff::1")));
    assert!(!set.contains(ip("2001:db9::1")));
    assert!(set.contains(ip("192.168.0.15")) && !set.contains(ip("192.168.0.21")));
    assert!(set.contains(ip("172.16.200.1")) && !set.contains(ip("172.17.0.1")));
    assert!(set.contains_bytes(&[192, 168, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], true));

    for bad in ["!any", "[1.2.3.4", "1.2.3.4]", "1.2.3.256", "1.2.3.0/33", "[]", "$NOPE", "1.2.3.0/255.0.255.0", ""] {
        assert!(v.resolve_address(bad).is_err(), "{bad} should fail");
    }
    // Nesting limit: no stack overflow on hostile input.
    let deep = format!("{}1.2.3.4{}", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(v.resolve_address(&deep).unwrap_err(), GroupError::TooDeep { group: Group::Address });
}

/// Resolved specifications are remembered by text; setting a variable (or a variable it
/// refers to) forgets them, and an error is remembered as the same error.
#[test]
fn resolved_specs_follow_variable_changes() {
    let mut v = RuleVars::default();
    let home = v.resolve_address("$EXTERNAL_NET").unwrap();
    assert!(!home.contains(ip("10.1.1.1")) && home.contains(ip("8.8.8.8")));
    v.set_address("HOME_NET", "8.8.8.0/24");
    let external = v.resolve_address("$EXTERNAL_NET").unwrap();
    assert!(external.contains(ip("10.1.1.1")) && !external.contains(ip("8.8.8.8")));
    assert_eq!(v.clone().resolve_address("$EXTERNAL_NET").unwrap(), external);
    let port_error = v.resolve_port("$NOPE").unwrap_err();
    assert_eq!(v.resolve_port("$NOPE").unwrap_err(), port_error);
    v.set_port("HTTP_PORTS", "8080");
    assert!(v.resolve_port("$HTTP_PORTS").unwrap().contains(8080));
    assert!(!v.resolve_port("$HTTP_PORTS").unwrap().contains(80));
}

#[test]
fn header_ports() {
    let v = vars();
    let p = v.resolve_port("[80,443,8000:8080,!8010]").unwrap();
    for port in [80, 443, 8000, 8009, 8011, 8080] {
        assert!(p.contains(port), "{port}");
    }
    for port in [81, 8010, 8081, 0, 65535] {
        assert!(!p.contains(port), "{port}");
    }
    let p = v.resolve_port("1024:").unwrap();
    assert!(p.contains(1024) && p.contains(65535) && !p.contains(1023));
    let p = v.resolve_port(":1023").unwrap();
    assert!(p.contains(0) && p.contains(1023) && !p.contains(1024));
    let p = v.resolve_port("$SHELLCODE_PORTS").unwrap();
    assert!(!p.contains(80) && p.contains(81));
    let p = v.resolve_port("$FILE_DATA_PORTS").unwrap();
    assert!(p.contains(80) && p.contains(110) && p.contains(143) && !p.contains(25));
    let p = v.resolve_port("$SIP_PORTS").unwrap();
    assert!(p.contains(5060) && p.contains(5061) && !p.contains(5062));
    let p = v.resolve_port("[1:10,![2,3:4]]").unwrap();
    assert_eq!(p.ranges.as_slice(), &[(1, 1), (5, 10)]);
    for bad in ["65536", "10:5", "!any", "[80", "http", "$HOME_NET"] {
        assert!(v.resolve_port(bad).is_err(), "{bad} should fail");
    }
}

#[test]
fn vars_override_and_cycles() {
    let mut v = RuleVars::default();
    v.set_address("HOME_NET", "[1.1.1.0/24]");
    v.set_address("$MY_NET", "[$HOME_NET, 2.2.2.2]");
    let set = v.resolve_address("$EXTERNAL_NET").unwrap();
    assert!(!set.contains(ip("1.1.1.9")) && set.contains(ip("192.168.0.1")));
    let set = v.resolve_address("$MY_NET").unwrap();
    assert!(set.contains(ip("1.1.1.9")) && set.contains(ip("2.2.2.2")));
    v.set_port("HTTP_PORTS", "[80,8080]");
    assert!(v.resolve_port("$FILE_DATA_PORTS").unwrap().contains(8080));
    assert!(v.validate().is_empty(), "{:?}", v.validate());

    v.set_address("A", "[$B, 1.2.3.4]");
    v.set_address("B", "!$A");
    let err = v.resolve_address("$A").unwrap_err();
    assert_eq!(err.to_string(), "address variable cycle: $A -> $B -> $A");
    v.set_port("P", "$P");
    assert!(matches!(v.resolve_port("$P").unwrap_err(), GroupError::Cycle { group: Group::Port, .. }));
    let errors = v.validate();
    assert_eq!(errors.len(), 3, "{errors:?}"); // A, B and P
                                               // Using the same variable twice is not a cycle.
    v.set_address("C", "[$HOME_NET,$HOME_NET]");
    assert!(v.resolve_address("$C").is_ok());
}

#[test]
fn address_set_ranges_merge_and_search() {
    let v = vars();
    let set = v.resolve_address("[10.0.0.0/24,10.0.1.0/24,10.0.0.128/25]").unwrap();
    assert_eq!(set.v4.as_slice().len(), 1, "adjacent CIDRs merge");
    // A long list still matches exactly (binary search over sorted ranges).
    let list: Vec<String> = (0..1000u32).map(|i| format!("10.{}.{}.0/24", i / 256, i % 256)).collect();
    let set = v.resolve_address(&format!("[{}]", list.join(","))).unwrap();
    assert!(set.contains(ip("10.3.231.5")));
    assert!(!set.contains(ip("10.3.232.5")));
}

// ---------------------------------------------------------------- lexing

#[test]
fn options_quoting_and_escapes() {
    let r = ok(r#"msg:"semi\; colon\: quote\" back\\slash\; still msg";"#);
    assert_eq!(r.msg, r#"semi; colon: quote" back\slash; still msg"#);
    // An unescaped ';' ends the option, quotes or not (Suricata splits options first).
    assert!(invalid(r#"msg:"semi; colon";"#).contains("does not end with its closing"));
    let c = content_of(r#"content:"a\;b\"c\\d\:e|41 42|f";"#);
    assert_eq!(c.pattern, b"a;b\"c\\d:eABf");
    // Whitespace everywhere and no space after ':'.
    let r = parse_rule("alert  tcp\tany any ->  any any  (  msg : \"x\" ;sid:  7 ; rev:2 ;  )", &vars()).unwrap();
    assert_eq!((r.sid, r.rev, r.msg.as_str()), (7, 2, "x"));
    // The last option needs its ';' too, as in Suricata.
    let e = parse_rule("alert tcp any any -> any any (msg:\"x\"; sid:5)", &vars()).unwrap_err();
    assert_eq!(e, RuleError::MissingSemicolon { option: "sid:5".into() });
    assert!(parse_rule("alert tcp any any -> any any (sid:1;", &vars()).is_err());
    assert!(parse_rule("alert tcp any any -> any any sid:1;", &vars()).is_err());
    assert!(invalid("content:;").contains("empty value"));
}

#[test]
fn loader_comments_continuations_and_errors() {
    let text = "# comment\n\
        \n\
        #alert tcp any any -> any any (msg:\"disabled\"; sid:99;)\n\
        alert tcp any any -> any any (msg:\"one\"; \\\n   content:\"abc\"; \\\n   sid:1;)\n\
        alert tcp any any -> any any (msg:\"bad\"; content:\"|4|\"; sid:2;)\n\
        alert tcp any any -> any any (msg:\"nosid\";)\n\
        alert tcp any any -> any any (msg:\"unsup\"; luajit:check.lua; sid:3;)\n\
        alert tcp any any -> any any (msg:\"unknown\"; foo_bar; content:\"x\"; sid:4;)\n\
        alert tcp any any -> any any (msg:\"dup\"; sid:1; rev:5;)\n\
        alert tcp any any -> any any (msg:\"dup-old\"; sid:1; rev:1;)\n\
        alert tcp any any -> any any (msg:\"other gid\"; gid:3; sid:1;)\n";
    let load = load_rules_str("test.rules", text, &vars());
    assert_eq!(load.rules.len(), 2, "{:?}", load.errors);
    let r1 = load.rules.iter().find(|r| r.sid == 1 && r.gid == 1).unwrap();
    assert_eq!(r1.msg, "dup", "higher rev replaces");
    assert_eq!(r1.line, 11);
    assert_eq!(r1.file.as_deref(), Some("test.rules"));
    assert!(load.rules.iter().any(|r| r.gid == 3 && r.sid == 1));

    assert_eq!(load.errors.len(), 3);
    assert_eq!(load.errors[0].file, "test.rules");
    assert_eq!(load.errors[0].line, 7);
    assert_eq!(
        load.errors[0].error,
        RuleError::BadOption { keyword: "content".into(), error: OptionError::BadHex { hex: "4".into() } }
    );
    assert_eq!(load.errors[0].to_string(), "test.rules:7: invalid hex in content: |4|");
    assert!(load.errors[0].to_string().starts_with("test.rules:7: "));
    assert_eq!(load.errors[1].line, 8);
    assert_eq!(load.errors[1].error, RuleError::MissingSid);
    assert_eq!(load.errors[1].error.to_string(), "missing sid");

    assert_eq!(load.errors[2].to_string(), "test.rules:10: unknown rule keyword 'foo_bar'");
    assert_eq!(load.unsupported.get("luajit"), Some(&1));
    assert_eq!(load.unsupported.len(), 1);
    assert_eq!(load.unsupported_rules[0].sid, Some(3));

    assert_eq!(load.duplicates.len(), 2);
    assert_eq!((load.duplicates[0].first_line, load.duplicates[0].second_line), (4, 11));
    assert!(load.duplicates[0].replaced);
    assert!(!load.duplicates[1].replaced);
    assert_eq!(load.duplicates[1].second_line, 12);
}

#[test]
fn unknown_keyword_with_bad_other_option_is_an_error() {
    // The bad value wins: a broken rule must be reported even if it would be skipped anyway.
    assert!(matches!(rule("luajit:x.lua; content:\"|zz|\";"), Err(RuleError::BadOption { .. })));
    assert_eq!(rule("luajit:x.lua;").unwrap_err(), RuleError::UnsupportedKeyword { name: "luajit".into() });
    // A keyword Suricata does not know either fails the rule, whatever comes after it.
    assert_eq!(rule("foo; luajit:x.lua;").unwrap_err(), RuleError::UnknownKeyword { name: "foo".into() });
}

#[test]
fn option_errors_are_typed_and_keep_their_messages() {
    assert_eq!(option_error("content:\"|zz|\";"), OptionError::BadHex { hex: "zz".into() });
    assert_eq!(option_error("sid:0;"), OptionError::SidZero);
    assert_eq!(option_error("nocase;"), OptionError::NeedsContent { keyword: "nocase".into() });
    assert_eq!(
        option_error("byte_test:2,~,1,0;"),
        OptionError::BadPart { keyword: "byte_test".into(), part: "operator", value: "~".into() }
    );
    assert_eq!(rule("msg:\"a\"; msg:\"b\";").unwrap_err(), RuleError::DuplicateOption { keyword: "msg" });
    // A message that does not name the keyword as written gets it in front.
    assert_eq!(invalid("uricontent:\"|zz|\";"), "uricontent: invalid hex in content: |zz|");
    assert_eq!(invalid("tcp.flags:SX;"), "tcp.flags: flags: invalid flag 'X'");
    assert_eq!(invalid("app-layer-protocol:gopher;"), "app-layer-protocol: unknown app-layer protocol 'gopher'");
    assert_eq!(invalid("app-layer-event:gopher.bad_thing;"), "app-layer-event: unknown app-layer protocol 'gopher'");
    assert!(invalid("app-layer-event:dns.;").contains("event"));
    assert_eq!(invalid("detection_filter:track by_src, count 1;"), "detection_filter: threshold: missing seconds");
    assert_eq!(invalid("flow:sideways;"), "invalid flow option 'sideways'");
    assert_eq!(invalid("msg:\"a\"; msg:\"b\";"), "'msg' given twice");
}

// ---------------------------------------------------------------- meta keywords

#[test]
fn meta_keywords() {
    let r = ok("msg:\"hello\"; rev:3; gid:2; classtype:trojan-activity; priority:2; \
        reference:url,example.com/a,b; metadata:created_at 2020_01_01, tag  x y; target:dest_ip;");
    assert_eq!((r.gid, r.rev, r.priority), (2, 3, Some(2)));
    assert_eq!(r.classtype.as_deref(), Some("trojan-activity"));
    assert!(r.options.contains(&RuleOption::Reference { system: "url".into(), id: "example.com/a,b".into() }));
    assert!(r.options.contains(&RuleOption::Metadata(vec![
        ("created_at".into(), "2020_01_01".into()),
        ("tag".into(), "x y".into())
    ])));
    assert!(r.options.contains(&RuleOption::Target(Target::DestIp)));
    let classes = ClassificationTable::default();
    assert_eq!(r.effective_priority(&classes), 2);
    assert_eq!(ok("classtype:trojan-activity;").effective_priority(&classes), 1);
    assert_eq!(ok("msg:\"x\";").effective_priority(&classes), DEFAULT_PRIORITY);

    assert!(invalid("sid:0;").contains("greater than 0"));
    assert!(invalid("rev:abc;").contains("rev"));
    assert!(invalid("priority:0;").contains("priority"));
    assert!(invalid("target:nowhere;").contains("target"));
    assert!(invalid("reference:nocomma;").contains("reference"));
    assert!(invalid("sid:2;").contains("sid"));
    assert!(invalid("msg:\"a\"; msg:\"b\";").contains("msg"));
}

// ---------------------------------------------------------------- content family

#[test]
fn content_and_modifiers() {
    let c = content_of("content:!\"GET |20|/\"; nocase; depth:10; offset:2; fast_pattern; rawbytes;");
    assert_eq!(c.pattern, b"GET  /");
    assert!(c.negated && c.nocase && c.rawbytes);
    assert_eq!(c.depth, Some(NumOrVar::Num(10)));
    assert_eq!(c.offset, Some(NumOrVar::Num(2)));
    assert_eq!(c.fast_pattern, Some(FastPattern::Whole));

    let r = ok("content:\"a\"; content:\"bc\"; distance:-1; within:len; fast_pattern:only;");
    let RuleOption::Content(c2) = &r.options[1] else { panic!() };
    assert_eq!(c2.distance, Some(NumOrVar::Num(-1)));
    assert_eq!(c2.within, Some(NumOrVar::Var("len".into())));
    assert_eq!(c2.fast_pattern, Some(FastPattern::Only));
    let RuleOption::Content(c1) = &r.options[0] else { panic!() };
    assert!(c1.distance.is_none(), "modifiers apply to the preceding content only");

    let c = content_of("content:\"abcdef\"; fast_pattern:1,3; startswith; endswith;");
    assert_eq!(c.fast_pattern, Some(FastPattern::Chop { offset: 1, length: 3 }));
    assert!(c.startswith && c.endswith);

    assert!(invalid("nocase;").contains("preceding content"));
    assert!(invalid("content:\"a\"; nocase; nocase;").contains("twice"));
    assert!(invalid("content:\"abc\"; depth:2;").contains("smaller"));
    assert!(invalid("content:\"a\"; depth:5; distance:1;").contains("mixes"));
    assert!(invalid("content:\"a\"; within:5; offset:1;").contains("mixes"));
    assert!(invalid("content:\"a\"; startswith; depth:3;").contains("startswith"));
    assert!(invalid("content:\"abc\"; fast_pattern:2,5;").contains("exceeds"));
    assert!(invalid("content:\"a\"; depth:-1;").contains("negative"));
    assert!(invalid("content:\"a\"; depth:1x;").contains("depth"));
    assert!(invalid("content:\"|4G|\";").contains("hex"));
    assert!(invalid("content:\"|41\";").contains("unterminated"));
    assert!(invalid("content:\"a\\xb\";").contains("escape"));
    assert!(invalid("content:abc;").contains("quoted"));
    assert!(invalid("content:\"\";").contains("empty"));
    assert!(invalid("nocase:1;").contains("no value"));
}

#[test]
fn sticky_buffers_legacy_modifiers_and_transforms() {
    let r = ok("http.uri; content:\"/a\"; content:\"b\"; http_header; file_data; dotprefix; \
        to_lowercase; pcrexform:\"^(.*)$\"; xor:\"0d0a\"; pkt_data; uricontent:\"u\";");
    let names: Vec<String> = r
        .options
        .iter()
        .map(|o| match o {
            RuleOption::StickyBuffer { buffer, .. } => format!("buf:{}", buffer.name),
            RuleOption::Content(c) => {
                format!("content:{}", c.legacy_buffer.map(|b| b.name).unwrap_or("-"))
            }
            RuleOption::Transform(t) => format!("{t:?}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "buf:http.uri",
            "content:-",
            "content:http.header",
            "buf:file.data",
            "Dotprefix",
            "ToLowercase",
            "Pcrexform(\"^(.*)$\")",
            "Xor(XorSpec { key: Static([13, 10]), offset: 0 })",
            "PktData",
            "content:http.uri",
            "Sid(1)"
        ]
    );
    let r = ok("http.header: to_client; content:\"x\";");
    assert!(matches!(r.options[0], RuleOption::StickyBuffer { direction: Some(BufferDirection::ToClient), .. }));
    // Every canonical name, sticky alias and modifier in the table is recognised.
    for b in buffers::BUFFERS {
        assert!(rule(&format!("{}; content:\"x\";", b.name)).is_ok(), "{}", b.name);
        for a in b.sticky_aliases {
            assert!(rule(&format!("{a}; content:\"x\";")).is_ok(), "{a}");
        }
        if let Some(m) = b.content_modifier {
            let c = content_of(&format!("content:\"x\"; {m};"));
            assert_eq!(c.legacy_buffer.unwrap().name, b.name);
        }
    }
    assert!(invalid("http_uri;").contains("preceding content"));
    assert!(invalid("content:\"a\"; http_uri; http_header;").contains("already"));
    assert!(invalid("http.uri: sideways;").contains("direction"));
    assert!(invalid("dotprefix:1;").contains("no value"));
    assert!(invalid("xor:\"zz\";").contains("xor"));
    assert!(invalid("pcrexform:abc;").contains("quoted"));
}

#[test]
fn pcre_forms() {
    let RuleOption::Pcre(p) = first(r#"pcre:!"/^GET\s+\/a\;b/ismxAEGRBOU";"#) else { panic!() };
    assert!(p.negated);
    assert_eq!(p.pattern, r"^GET\s+\/a\;b");
    // As in Suricata, a ';' ends the option even inside quotes unless escaped.
    assert!(invalid(r#"pcre:"/a;b/";"#).contains("does not end with its closing"));
    let f = &p.flags;
    assert!(f.caseless && f.dotall && f.multiline && f.extended && f.anchored && f.dollar_endonly);
    assert!(f.ungreedy && f.relative && f.rawbytes && f.no_match_limit);
    assert_eq!(p.buffer.unwrap().name, "http.uri");
    for (flag, name) in [
        ("P", "http.request_body"),
        ("Q", "http.response_body"),
        ("H", "http.header"),
        ("D", "http.header.raw"),
        ("M", "http.method"),
        ("C", "http.cookie"),
        ("S", "http.stat_code"),
        ("Y", "http.stat_msg"),
        ("V", "http.user_agent"),
        ("W", "http.host"),
        ("Z", "http.host.raw"),
        ("I", "http.uri.raw"),
    ] {
        let RuleOption::Pcre(p) = first(&format!("pcre:\"/x/{flag}\";")) else { panic!() };
        assert_eq!(p.buffer.unwrap().name, name);
    }
    let RuleOption::Pcre(p) = first(r#"pcre:"/a(\d+)/i, flow:num";"#) else { panic!() };
    assert_eq!(p.captures.as_deref(), Some("flow:num"));
    assert!(p.flags.caseless);
    assert!(invalid("pcre:\"/a/q\";").contains("modifier"));
    assert!(invalid("pcre:\"/a/UP\";").contains("more than one buffer"));
    assert!(invalid("pcre:\"abc\";").contains("'/'"));
    // Suricata takes an unquoted regex too (suricata-verify UriTestSig02: `pcre:/one/U;`).
    let RuleOption::Pcre(p) = first("pcre:/abc/U;") else { panic!() };
    assert_eq!((p.pattern.as_str(), p.buffer.map(|b| b.name)), ("abc", Some("http.uri")));
    assert!(invalid("pcre:abc;").contains("quoted"));
    assert!(invalid("pcre:\"//\";").contains("empty"));
}

#[test]
fn isdataat_and_sizes() {
    assert_eq!(
        first("isdataat:!10,relative,rawbytes;"),
        RuleOption::Isdataat(Isdataat { negated: true, offset: NumOrVar::Num(10), relative: true, rawbytes: true })
    );
    assert!(invalid("isdataat:5,sideways;").contains("isdataat"));
    let cases: &[(&str, UintCmp<u64>)] = &[
        ("bsize:10;", UintCmp::Eq(10)),
        ("bsize:<10;", UintCmp::Lt(10)),
        ("bsize:>10;", UintCmp::Gt(10)),
        ("bsize:<=10;", UintCmp::Le(10)),
        ("bsize:>= 10;", UintCmp::Ge(10)),
        ("bsize:5<>10;", UintCmp::Range(5, 10)),
        ("bsize:!5;", UintCmp::Ne(5)),
    ];
    for (text, want) in cases {
        assert_eq!(first(text), RuleOption::Bsize(*want), "{text}");
    }
    assert_eq!(first("dsize:>65000;"), RuleOption::Dsize(UintCmp::Gt(65000)));
    assert!(invalid("dsize:70000;").contains("out of range"));
    assert!(invalid("dsize:10<>5;").contains("below"));
    assert!(invalid("bsize:abc;").contains("bsize"));
    assert_eq!(first("urilen:5<>10,raw;"), RuleOption::Urilen { cmp: UintCmp::Range(5, 10), raw: true });
    assert_eq!(first("urilen:>3;"), RuleOption::Urilen { cmp: UintCmp::Gt(3), raw: false });
    assert!(invalid("urilen:3,cooked;").contains("urilen"));
    // Range semantics are exclusive.
    let r = UintCmp::Range(2u8, 5u8);
    assert!(!r.matches(2) && r.matches(3) && r.matches(4) && !r.matches(5));
}

#[test]
fn byte_keywords() {
    let RuleOption::ByteTest(t) = first("byte_test:4,!&,0x10,-2,relative,little,bitmask 0xff00;") else { panic!() };
    assert_eq!(t.bytes, NumOrVar::Num(4));
    assert!(t.negated && t.relative);
    assert_eq!((t.op, t.endian, t.bitmask), (ByteTestOp::And, Endian::Little, Some(0xff00)));
    assert_eq!((t.value.clone(), t.offset.clone()), (NumOrVar::Num(16), NumOrVar::Num(-2)));
    let RuleOption::ByteTest(t) = first("byte_test:3,>=,val,off,string,hex,dce;") else { panic!() };
    assert_eq!(t.string, Some(NumBase::Hex));
    assert_eq!(t.endian, Endian::Dce);
    assert_eq!(t.value, NumOrVar::Var("val".into()));
    let RuleOption::ByteTest(t) = first("byte_test:0,=,0,0,string,dec;") else { panic!() };
    assert_eq!(t.bytes, NumOrVar::Num(0));
    assert!(invalid("byte_test:9,=,1,0;").contains("out of range"));
    assert!(invalid("byte_test:2,~,1,0;").contains("operator"));
    assert!(invalid("byte_test:2,=,1;").contains("needs"));
    assert!(invalid("byte_test:2,=,1,0,big,little;").contains("twice"));
    assert!(invalid("byte_test:2,=,1,0,wat;").contains("unknown option"));

    let RuleOption::ByteJump(j) =
        first("byte_jump:4,12,relative,multiplier 2,align,from_beginning,post_offset -4,little;")
    else {
        panic!()
    };
    assert_eq!((j.multiplier, j.post_offset, j.endian), (Some(2), Some(-4), Endian::Little));
    assert!(j.align && j.from_beginning && j.relative && !j.from_end);
    let RuleOption::ByteJump(j) = first("byte_jump:len,0,relative,from_end;") else { panic!() };
    assert_eq!(j.bytes, NumOrVar::Var("len".into()));
    assert!(invalid("byte_jump:4,0,from_beginning,from_end;").contains("exclusive"));

    let RuleOption::ByteExtract(e) = first("byte_extract:2,0,my_len,relative,multiplier 4,align 4,string,dec;") else {
        panic!()
    };
    assert_eq!((e.bytes, e.offset, e.name.as_str()), (2, 0, "my_len"));
    assert_eq!((e.multiplier, e.align, e.string), (Some(4), Some(4), Some(NumBase::Dec)));
    assert!(invalid("byte_extract:2,0,9bad;").contains("variable name"));
    assert!(invalid("byte_extract:2,0,v,align 3;").contains("align"));

    let RuleOption::ByteMath(m) =
        first("byte_math:bytes 2, offset 1, oper <<, rvalue 3, result out, relative, endian little, string hex;")
    else {
        panic!()
    };
    assert_eq!((m.op, m.rvalue.clone(), m.result.as_str()), (ByteMathOp::Shl, NumOrVar::Num(3), "out"));
    assert_eq!((m.endian, m.string, m.relative), (Endian::Little, Some(NumBase::Hex), true));
    assert!(invalid("byte_math:bytes 2, offset 1, oper /, rvalue 0, result r;").contains("division"));
    assert!(invalid("byte_math:bytes 2, offset 1, oper %, rvalue 1, result r;").contains("oper"));
    assert!(invalid("byte_math:bytes 2, offset 1, oper +, rvalue 1;").contains("result"));
}

#[test]
fn flow_and_flags() {
    let RuleOption::Flow(f) = first("flow:established,to_server,only_stream;") else { panic!() };
    assert!(f.established && f.to_server && f.only_stream && !f.to_client);
    let RuleOption::Flow(f) = first("flow: from_server, not_established, no_frag;") else { panic!() };
    assert!(f.to_client && f.not_established && f.no_frag);
    let RuleOption::Flow(f) = first("flow:stateless,from_client,no_stream,only_frag;") else { panic!() };
    assert!(f.stateless && f.to_server && f.no_stream && f.only_frag);
    assert!(invalid("flow:to_server,to_client;").contains("exclusive"));
    assert!(invalid("flow:established,stateless;").contains("exclusive"));
    assert!(invalid("flow:sideways;").contains("flow"));

    use tcp_flag::*;
    assert_eq!(first("flags:S;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::Exact, flags: SYN, ignore: 0 }));
    assert_eq!(first("flags:SA;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::Exact, flags: SYN | ACK, ignore: 0 }));
    assert_eq!(first("flags:!R;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::Not, flags: RST, ignore: 0 }));
    assert_eq!(first("flags:A+;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::All, flags: ACK, ignore: 0 }));
    assert_eq!(first("flags:*FU;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::Any, flags: FIN | URG, ignore: 0 }));
    assert_eq!(
        first("flags:S,CE;"),
        RuleOption::Flags(TcpFlags { mode: FlagsMode::Exact, flags: SYN, ignore: CWR | ECE })
    );
    assert_eq!(
        first("flags:S12;"),
        RuleOption::Flags(TcpFlags { mode: FlagsMode::Exact, flags: SYN | CWR | ECE, ignore: 0 })
    );
    assert_eq!(first("flags:0;"), RuleOption::Flags(TcpFlags { mode: FlagsMode::Exact, flags: 0, ignore: 0 }));
    let RuleOption::Flags(f) = first("flags:S,12;") else { panic!() };
    assert!(f.matches(SYN | ECE) && f.matches(SYN) && !f.matches(SYN | ACK));
    let RuleOption::Flags(f) = first("flags:SA+;") else { panic!() };
    assert!(f.matches(SYN | ACK | PSH) && !f.matches(SYN));
    assert!(invalid("flags:SX;").contains("invalid flag"));
    assert!(invalid("flags:+*S;").contains("modifier"));
    assert!(invalid("flags:+;").contains("no flags"));
}

#[test]
fn ip_and_icmp_header_keywords() {
    assert_eq!(first("window:!1024;"), RuleOption::Window { negated: true, size: 1024 });
    assert_eq!(first("seq:0;"), RuleOption::Seq(0));
    assert_eq!(first("ack:4294967295;"), RuleOption::Ack(u32::MAX));
    assert_eq!(first("ttl:<10;"), RuleOption::Ttl(UintCmp::Lt(10)));
    assert_eq!(first("ttl:1-5;"), RuleOption::Ttl(UintCmp::Range(1, 5)));
    assert_eq!(first("tos:!0x10;"), RuleOption::Tos { negated: true, tos: 16 });
    assert_eq!(first("ipopts:lsrr;"), RuleOption::Ipopts(IpOption::LooseSourceRoute));
    assert_eq!(
        first("fragbits:M+;"),
        RuleOption::Fragbits(Fragbits { mode: FlagsMode::All, bits: frag_bit::MORE_FRAGMENTS })
    );
    assert_eq!(first("fragbits:!DR;"), RuleOption::Fragbits(Fragbits { mode: FlagsMode::Not, bits: 6 }));
    assert_eq!(first("fragoffset:>100;"), RuleOption::Fragoffset(UintCmp::Gt(100)));
    assert_eq!(first("id:31337;"), RuleOption::IpId(31337));
    assert_eq!(first("ip_proto:!tcp;"), RuleOption::IpProto(UintCmp::Ne(6)));
    assert_eq!(first("ip_proto:<50;"), RuleOption::IpProto(UintCmp::Lt(50)));
    assert_eq!(first("ip_proto:ipv6-icmp;"), RuleOption::IpProto(UintCmp::Eq(58)));
    assert_eq!(first("itype:>30;"), RuleOption::Itype(UintCmp::Gt(30)));
    assert_eq!(first("itype:!= 0;"), RuleOption::Itype(UintCmp::Ne(0)));
    assert_eq!(first("icode:3<>8;"), RuleOption::Icode(UintCmp::Range(3, 8)));
    assert_eq!(first("icmp_id:77;"), RuleOption::IcmpId(77));
    assert_eq!(first("icmp_seq:0;"), RuleOption::IcmpSeq(0));
    assert!(invalid("window:70000;").contains("window"));
    assert!(invalid("ttl:300;").contains("range"));
    assert!(invalid("tos:0x100;").contains("tos"));
    assert!(invalid("ipopts:foo;").contains("ipopts"));
    assert!(invalid("fragbits:X;").contains("fragbits"));
    assert!(invalid("ip_proto:bogus;").contains("ip_proto"));
    assert!(invalid("icmp_seq:-1;").contains("icmp_seq"));
}

#[test]
fn flow_state_keywords() {
    assert_eq!(
        first("flowbits:set,a.b;"),
        RuleOption::Flowbits(Flowbits { cmd: FlowbitsCmd::Set, names: vec!["a.b".into()], group: BitsGroup::Single })
    );
    assert_eq!(
        first("flowbits:isset, a | b;"),
        RuleOption::Flowbits(Flowbits {
            cmd: FlowbitsCmd::IsSet,
            names: vec!["a".into(), "b".into()],
            group: BitsGroup::Any
        })
    );
    assert_eq!(
        first("flowbits:unset,a&b;"),
        RuleOption::Flowbits(Flowbits {
            cmd: FlowbitsCmd::Unset,
            names: vec!["a".into(), "b".into()],
            group: BitsGroup::All
        })
    );
    assert!(ok("flowbits:noalert;").is_noalert());
    for cmd in ["toggle", "isnotset"] {
        assert!(rule(&format!("flowbits:{cmd},x;")).is_ok());
    }
    assert!(invalid("flowbits:set;").contains("needs a name"));
    assert!(invalid("flowbits:set,a|b;").contains("isset"));
    assert!(invalid("flowbits:flip,a;").contains("command"));
    assert!(invalid("flowbits:noalert,a;").contains("noalert"));

    assert_eq!(
        first("flowint:cnt,+,1;"),
        RuleOption::Flowint(Flowint { name: "cnt".into(), op: FlowintOp::Add, value: Some(NumOrVar::Num(1)) })
    );
    assert_eq!(
        first("flowint:cnt,isset;"),
        RuleOption::Flowint(Flowint { name: "cnt".into(), op: FlowintOp::IsSet, value: None })
    );
    assert!(matches!(
        first("flowint:cnt,>=,other;"),
        RuleOption::Flowint(Flowint { op: FlowintOp::Ge, value: Some(NumOrVar::Var(_)), .. })
    ));
    assert!(invalid("flowint:cnt,+;").contains("needs a value"));
    assert!(invalid("flowint:cnt,**,1;").contains("operator"));

    assert_eq!(
        first("xbits:set,badip,track ip_src,expire 60;"),
        RuleOption::Xbits(Xbits {
            cmd: FlowbitsCmd::Set,
            name: "badip".into(),
            track: Some(XbitsTrack::IpSrc),
            expire: Some(60)
        })
    );
    assert!(invalid("xbits:set,x;").contains("track"));
    assert!(invalid("xbits:set,x,track nowhere;").contains("track"));
}

#[test]
fn limits_and_other_keywords() {
    assert_eq!(
        first("threshold: type limit, track by_src, count 1, seconds 60;"),
        RuleOption::Threshold(Threshold {
            kind: ThresholdType::Limit,
            track: Track::BySrc,
            count: 1,
            seconds: 60,
            multiplier: None
        })
    );
    assert!(matches!(
        first("threshold:type backoff, track by_flow, count 1, multiplier 10;"),
        RuleOption::Threshold(Threshold { kind: ThresholdType::Backoff, multiplier: Some(10), .. })
    ));
    assert!(invalid("threshold:type limit, track by_src, count 1;").contains("seconds"));
    assert!(invalid("threshold:type often, track by_src, count 1, seconds 1;").contains("type"));
    assert_eq!(
        first("detection_filter:track by_dst, count 5, seconds 10, unique_on dst_port;"),
        RuleOption::DetectionFilter(DetectionFilter {
            track: Track::ByDst,
            count: 5,
            seconds: 10,
            unique_on: Some(UniqueOn::DstPort)
        })
    );
    assert!(invalid("detection_filter:type limit, track by_dst, count 5, seconds 10;").contains("type"));

    assert!(ok("noalert;").is_noalert());
    assert!(ok("bypass;").is_bypass() && !ok("noalert;").is_bypass());
    assert!(invalid("bypass:yes;").contains("bypass"), "bypass takes no value");
    assert_eq!(
        first("stream_size:server,<,6;"),
        RuleOption::StreamSize { side: StreamSide::Server, cmp: UintCmp::Lt(6) }
    );
    assert_eq!(
        first("stream_size:either,!=,6;"),
        RuleOption::StreamSize { side: StreamSide::Either, cmp: UintCmp::Ne(6) }
    );
    assert!(invalid("stream_size:up,<,6;").contains("side"));
    assert_eq!(
        first("app-layer-protocol:!http;"),
        RuleOption::AppLayerProtocol { negated: true, name: "http", exact: false }
    );
    assert_eq!(
        first("app-layer-protocol:dns,exact;"),
        RuleOption::AppLayerProtocol { negated: false, name: "dns", exact: true }
    );
    assert!(invalid("app-layer-protocol:gopher;").contains("unknown app-layer"));
    assert_eq!(
        first("base64_decode:bytes 10, offset 2, relative;"),
        RuleOption::Base64Decode(Base64Decode { bytes: Some(10), offset: Some(2), relative: true })
    );
    assert!(matches!(first("content:\"a\"; prefilter;"), RuleOption::Content(Content { prefilter: true, .. })));
}

// ---------------------------------------------------------------- config files

#[test]
fn classification_config() {
    let defaults = ClassificationTable::default();
    assert_eq!(defaults.get("trojan-activity").unwrap().priority, 1);
    assert_eq!(defaults.get("TCP-Connection").unwrap().priority, 4);
    assert!(defaults.len() >= 40);
    let text = "# comment\n\
        config classification: not-suspicious,Not Suspicious Traffic,3\n\
        config classification:web,Web, with a comma, 1\n\
        config classification: broken,No priority\n\
        config classification: bad-prio,Desc,x\n\
        something else\n";
    let (table, errors) = ClassificationTable::parse("classification.config", text);
    assert_eq!(table.len(), 2);
    assert_eq!(table.get("web").unwrap().description, "Web, with a comma");
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [4, 5, 6]);
    assert!(errors[0].to_string().starts_with("classification.config:4:"));
}

#[test]
fn threshold_config() {
    let mut v = vars();
    v.set_address("SCANNERS", "[10.9.0.0/16]");
    let text = "# thresholds\n\
        threshold gen_id 1, sig_id 2000, type limit, track by_src, count 1, seconds 60\n\
        event_filter gen_id 1, sig_id 0, type both, track by_dst, count 2, seconds 10\n\
        suppress gen_id 1, sig_id 2001, track by_src, ip 10.0.0.1\n\
        suppress gen_id 1, sig_id 2002\n\
        suppress gen_id 1, sig_id 2003, track by_either, ip [$SCANNERS, 1.2.3.4]\n\
        rate_filter gen_id 1, sig_id 2004, track by_rule, count 10, seconds 1, new_action drop, timeout 30\n\
        threshold gen_id 1, sig_id 2005, type limit, track by_src, count 1\n\
        suppress gen_id 1, sig_id 2006, track by_src\n\
        rate_filter gen_id 1, sig_id 2007, track by_src, count 1, seconds 1, new_action explode, timeout 1\n\
        frobnicate gen_id 1, sig_id 1\n\
        suppress gen_id 1, sig_id 2008, track by_src, ip $NOPE\n";
    let (cfg, errors) = ThresholdConfig::parse("threshold.config", text, &v);
    assert_eq!(cfg.entries.len(), 6, "{errors:?}");
    assert_eq!(
        cfg.entries[0],
        ThresholdEntry::Threshold {
            gen_id: 1,
            sig_id: 2000,
            threshold: Threshold {
                kind: ThresholdType::Limit,
                track: Track::BySrc,
                count: 1,
                seconds: 60,
                multiplier: None
            }
        }
    );
    assert_eq!(cfg.entries[1].threshold_type(), Some(ThresholdType::Both));
    assert_eq!(cfg.entries[1].ids(), (1, 0));
    let ThresholdEntry::Suppress { track, ip: Some(set), .. } = &cfg.entries[2] else { panic!() };
    assert_eq!(*track, Some(Track::BySrc));
    assert!(set.contains(ip("10.0.0.1")) && !set.contains(ip("10.0.0.2")));
    assert_eq!(cfg.entries[3], ThresholdEntry::Suppress { gen_id: 1, sig_id: 2002, track: None, ip: None });
    let ThresholdEntry::Suppress { ip: Some(set), .. } = &cfg.entries[4] else { panic!() };
    assert!(set.contains(ip("10.9.3.3")) && set.contains(ip("1.2.3.4")));
    assert_eq!(
        cfg.entries[5],
        ThresholdEntry::RateFilter {
            gen_id: 1,
            sig_id: 2004,
            track: Track::ByRule,
            count: 10,
            seconds: 1,
            new_action: config::RateFilterAction::Drop,
            timeout: 30
        }
    );
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [8, 9, 10, 11, 12]);
    assert_eq!(
        errors[0].error,
        RuleError::BadField(OptionError::MissingPart { keyword: "threshold", part: "seconds" })
    );
    assert!(
        matches!(&errors[4].error, RuleError::SuppressIp(GroupError::UnknownVariable { name, .. }) if name == "NOPE")
    );
    assert_eq!(errors[4].error.to_string(), "suppress ip: unknown address variable $NOPE");
}

// ---------------------------------------------------------------- robustness

proptest::proptest! {
    #[test]
    fn parse_rule_never_panics(s in "\\PC{0,200}") {
        let _ = parse_rule(&s, &RuleVars::default());
    }

    #[test]
    fn parse_options_never_panic(s in "[a-z_.:;,!<>=\"|0-9 \\\\-]{0,120}") {
        let _ = parse_rule(&format!("alert tcp any any -> any any ({s})"), &RuleVars::default());
        let _ = parse_rule(&format!("alert tcp any any -> any any (content:\"a\"; {s} sid:1;)"), &RuleVars::default());
    }

    #[test]
    fn port_set_matches_naive(ports in proptest::collection::vec((0u16..2000, 0u16..50, proptest::bool::ANY), 1..12), probe in 0u16..2100) {
        let items: Vec<String> = ports.iter().map(|(lo, len, neg)| format!("{}{}:{}", if *neg { "!" } else { "" }, lo, lo + len)).collect();
        let spec = format!("[{}]", items.join(","));
        let positives: Vec<_> = ports.iter().filter(|p| !p.2).collect();
        let in_pos = positives.is_empty() || positives.iter().any(|(lo, len, _)| probe >= *lo && probe <= lo + len);
        let in_neg = ports.iter().filter(|p| p.2).any(|(lo, len, _)| probe >= *lo && probe <= lo + len);
        let expected = in_pos && !in_neg;
        match RuleVars::default().resolve_port(&spec) {
            Ok(set) => proptest::prop_assert_eq!(set.contains(probe), expected),
            Err(_) => proptest::prop_assert!(!expected, "empty set error although {} should match", probe),
        }
    }
}

#[test]
fn flow_counter_keywords() {
    use crate::detect::rule::options::{FlowCount, FlowCountDir, FlowCountKind};
    assert_eq!(
        first("flow.pkts:toclient,=10;"),
        RuleOption::FlowCount(FlowCount {
            kind: FlowCountKind::Packets,
            dir: FlowCountDir::ToClient,
            cmp: UintCmp::Eq(10)
        })
    );
    assert_eq!(
        first("flow.bytes:either,>3000;"),
        RuleOption::FlowCount(FlowCount {
            kind: FlowCountKind::Bytes,
            dir: FlowCountDir::Either,
            cmp: UintCmp::Gt(3000)
        })
    );
    assert_eq!(
        first("flow.bytes_toserver:<3000;"),
        RuleOption::FlowCount(FlowCount {
            kind: FlowCountKind::Bytes,
            dir: FlowCountDir::ToServer,
            cmp: UintCmp::Lt(3000)
        })
    );
    assert_eq!(
        first("flow.pkts_toclient:10;"),
        RuleOption::FlowCount(FlowCount {
            kind: FlowCountKind::Packets,
            dir: FlowCountDir::ToClient,
            cmp: UintCmp::Eq(10)
        })
    );
    invalid("flow.pkts:sideways,=1;");
    invalid("flow.pkts:10;");
}

// ---------------------------------------------------------------- tls keywords

fn app_number(opts: &str) -> (AppNumber, UintCmp<u64>) {
    match first(opts) {
        RuleOption::AppNumber { field, cmp, .. } => (field, cmp),
        other => panic!("expected an app number, got {other:?}"),
    }
}

#[test]
fn tls_version_values() {
    assert_eq!(app_number("tls.version:1.2;"), (AppNumber::TlsVersion, UintCmp::Eq(0x0303)));
    assert_eq!(app_number("tls.version:1.0;"), (AppNumber::TlsVersion, UintCmp::Eq(0x0301)));
    assert_eq!(app_number("tls.version:\"1.3\";"), (AppNumber::TlsVersion, UintCmp::Eq(0x0304)));
    assert_eq!(app_number("tls.version:ssl3;"), (AppNumber::TlsVersion, UintCmp::Eq(0x0300)));
    assert_eq!(app_number("tls.version:0x7f1c;"), (AppNumber::TlsVersion, UintCmp::Eq(0x7f1c)));
    assert!(invalid("tls.version:2.5;").contains("tls.version"));
    assert!(invalid("tls.version:0x1ffff;").contains("tls.version"));
}

#[test]
fn tls_cert_chain_len_comparisons() {
    assert_eq!(app_number("tls.cert_chain_len:3;"), (AppNumber::TlsCertChainLen, UintCmp::Eq(3)));
    assert_eq!(app_number("tls.cert_chain_len:<4;"), (AppNumber::TlsCertChainLen, UintCmp::Lt(4)));
    assert_eq!(app_number("tls.cert_chain_len:0<>4;"), (AppNumber::TlsCertChainLen, UintCmp::Range(0, 4)));
    assert_eq!(app_number("tls.cert_chain_len:!2;"), (AppNumber::TlsCertChainLen, UintCmp::Ne(2)));
}

#[test]
fn tls_cert_validity_dates() {
    // 2015-01-01T00:00:00Z and 2025-01-01T00:00:00Z.
    assert_eq!(app_number("tls_cert_notafter:>2015;"), (AppNumber::TlsCertNotAfter, UintCmp::Ge(1_420_070_400)));
    assert_eq!(app_number("tls_cert_notbefore:<2025;"), (AppNumber::TlsCertNotBefore, UintCmp::Le(1_735_689_600)));
    assert_eq!(
        app_number("tls_cert_notbefore:2016-08-08T01:02:03;"),
        (AppNumber::TlsCertNotBefore, UintCmp::Eq(1_470_614_400 + 3723))
    );
    assert_eq!(
        app_number("tls_cert_notafter:2015-01<>2015-02;"),
        (AppNumber::TlsCertNotAfter, UintCmp::Range(1_420_070_399, 1_422_748_801))
    );
    assert_eq!(app_number("tls_cert_notafter:1420070400;"), (AppNumber::TlsCertNotAfter, UintCmp::Eq(1_420_070_400)));
    for bad in ["2015-13", "15", "2015-01-01T25", "2015-1-1", "abc", "1969"] {
        invalid(&format!("tls_cert_notafter:{bad};"));
    }
}

#[test]
fn tls_legacy_string_keywords_are_buffer_contents() {
    let c = content_of("tls.subject:\"CN=a|b\";");
    assert_eq!(c.pattern, b"CN=a|b", "taken literally, no hex");
    assert_eq!(c.legacy_buffer.map(|b| b.name), Some("tls.cert_subject"));
    assert!(!c.negated && !c.nocase);
    let c = content_of("tls.issuerdn:!\"CN=Google\";");
    assert!(c.negated);
    assert_eq!(c.legacy_buffer.map(|b| b.name), Some("tls.cert_issuer"));
    let c = content_of("tls.fingerprint:\"90:86:A4\";");
    assert_eq!(c.pattern, b"90:86:a4");
    assert_eq!(c.legacy_buffer.map(|b| b.name), Some("tls.cert_fingerprint"));
}

// ---------------------------------------------------------------- strictness

/// One malformed rule per reason, each between good rules: every bad rule is one
/// `file:line: reason` (its first line for a continued rule), none is half-loaded, and every
/// good rule loads.
#[test]
fn malformed_rules_fail_with_file_line_and_reason() {
    const GOOD: &str = "alert tcp any any -> any any (msg:\"good\"; content:\"ok\"; sid:";
    let cases: &[(&[u8], &str)] = &[
        (b"(msg:\"no final semicolon\"; sid:101)", "option 'sid:101' has no terminating ';'"),
        (
            b"(msg:\"no semicolon\" content:\"abc\"; sid:102;)",
            "'msg': unescaped '\"' after \"no semicolon\" inside the quoted value (missing ';'? escape a quote as \\\")",
        ),
        (
            b"(msg:\"unterminated; content:\"abc\"; sid:103;)",
            "'msg': the quoted value does not end with its closing '\"' (missing ';' or '\"'?)",
        ),
        (b"(msg:\"x\"; content:\"abc; sid:104;)", "'content': the quoted value does not end with its closing '\"' (missing ';' or '\"'?)"),
        (b"(msg:\"x\"; contnet:\"abc\"; sid:105;)", "unknown rule keyword 'contnet'"),
        (b"(msg:\"x\"; ttl:300; sid:106;)", "ttl value '300' out of range"),
        (b"(msg:\"x\"; dsize:99999999999; sid:107;)", "dsize value '99999999999' out of range"),
        (b"(msg:\"x\"; flags:SZ; sid:108;)", "flags: invalid flag 'Z'"),
        (b"(msg:\"x\"; depth:4; sid:109;)", "'depth' needs a preceding content"),
        (
            b"(msg:\"x\"; pcre:\"/a(b/\"; sid:110;)",
            "pcre: regex does not compile: PCRE2: error compiling pattern at offset 3: missing closing parenthesis",
        ),
        (b"(msg:\"x\"; pcre:\"/ab/q\"; sid:111;)", "unknown pcre modifier 'q'"),
        (b"(msg:\"x\"; sid:0;)", "sid must be greater than 0"),
        (b"(msg:\"x\"; content:\"|4|\"; sid:113;)", "invalid hex in content: |4|"),
        (b"(msg:\"x\"; byte_test:2,~,1,0; sid:114;)", "byte_test: invalid operator '~'"),
        (
            b"(msg:\"caf\xe9\"; sid:115;)",
            "invalid UTF-8: byte 0xe9 at line 9, column 38 (write such bytes in hex, e.g. content:\"|e9|\")",
        ),
        (
            b"(msg:\"x\"; sid:116; \\\n  content:\"abc\" \\\n  rev:1;)",
            "'content': the quoted value does not end with its closing '\"' (missing ';' or '\"'?)",
        ),
    ];
    let mut text = Vec::new();
    let mut line = 1;
    let mut expected = Vec::new();
    for (i, (options, reason)) in cases.iter().enumerate() {
        text.extend_from_slice(format!("{GOOD}{};)\n", 1 + i).as_bytes());
        line += 1;
        text.extend_from_slice(b"alert tcp any any -> any 80 ");
        text.extend_from_slice(options);
        text.push(b'\n');
        expected.push(format!("t.rules:{line}: {reason}"));
        line += 1 + options.iter().filter(|&&b| b == b'\n').count();
    }
    // The reason of the UTF-8 case names its own line too.
    let utf8 = cases.iter().position(|(_, r)| r.starts_with("invalid UTF-8")).unwrap();
    let utf8_line = 2 * (utf8 + 1);
    expected[utf8] =
        format!("t.rules:{utf8_line}: {}", cases[utf8].1.replace("line 9,", &format!("line {utf8_line},")));
    let mut load = RuleSetLoad::new();
    load.load_bytes("t.rules", &text, &vars());
    let got: Vec<String> = load.errors.iter().map(ToString::to_string).collect();
    assert_eq!(got, expected);
    let sids: Vec<u32> = load.rules.iter().map(|r| r.sid).collect();
    assert_eq!(sids, (1..=cases.len() as u32).collect::<Vec<_>>(), "every good rule loads, no bad one");
    assert!(load.unsupported.is_empty());
}

/// A line that is not UTF-8 fails only its rule (a continuation line names itself), and a
/// comment's bytes do not matter; `|ff|` in hex is how a rule matches such a byte.
#[test]
fn non_utf8_lines_fail_their_rule_only() {
    let text = b"# comment with a stray \xff byte\n\
        alert tcp any any -> any any (msg:\"hex\"; content:\"|ff|\"; sid:1;)\n\
        alert tcp any any -> any any (msg:\"raw\"; \\\n content:\"\xff\"; sid:2;)\n\
        alert tcp any any -> any any (msg:\"after\"; sid:3;)\n";
    let mut load = RuleSetLoad::new();
    load.load_bytes("u.rules", text, &vars());
    assert_eq!(load.rules.iter().map(|r| r.sid).collect::<Vec<_>>(), [1, 3]);
    let RuleOption::Content(c) = &load.rules[0].options[1] else { panic!("content") };
    assert_eq!(c.pattern, [0xff]);
    assert_eq!(load.errors.len(), 1);
    assert_eq!(load.errors[0].line, 3, "a continued rule is reported at its first line");
    assert_eq!(load.errors[0].error, RuleError::InvalidUtf8 { line: 4, column: 11, byte: 0xff });
}

/// Quoting rules of the lexer: a quoted value ends with its closing quote; `pcre` may hold a
/// bare quote and take capture variables after it; `\;` never ends an option.
#[test]
fn quoted_values_close_where_they_end() {
    assert!(ok(r#"content:!"abc";"#).options.iter().any(|o| matches!(o, RuleOption::Content(c) if c.negated)));
    assert!(ok(r#"pcre:"/a"b/";"#).options.iter().any(|o| matches!(o, RuleOption::Pcre(_))));
    let r = ok(r#"msg:"a \"quoted\" word";"#);
    assert_eq!(r.msg, r#"a "quoted" word"#);
    assert_eq!(
        rule(r#"msg:"ends with an escaped quote\";"#).unwrap_err(),
        RuleError::UnterminatedQuote { keyword: "msg".into() }
    );
    assert_eq!(rule(r#"msg:"";"#).map(|r| r.msg), Ok(String::new()));
    assert_eq!(rule(r#"pcre:"/abc/i"#).unwrap_err(), RuleError::UnterminatedQuote { keyword: "pcre".into() });
}

#[test]
fn number_index_selects_the_values_compared() {
    use super::values::NumberIndex;
    let eq1 = UintCmp::Eq(1u64);
    let parse = |t: &str| NumberIndex::parse(t).unwrap();
    assert_eq!(NumberIndex::parse("x"), None);
    assert_eq!(parse(" oob_or -2"), NumberIndex::At { index: -2, oob_or: true });
    for (index, values, want) in [
        ("any", &[5u64, 1][..], true),
        ("all", &[1, 1], true),
        ("all", &[1, 5], false),
        ("all", &[], false),
        ("all_or_absent", &[], true),
        ("or_absent", &[], true),
        ("or_absent", &[5], false),
        ("0", &[1, 5], true),
        ("1", &[1, 5], false),
        ("-1", &[5, 1], true),
        ("-3", &[5, 1], false),
        ("oob_or 3", &[5, 1], true),
    ] {
        assert_eq!(parse(index).matches(&eq1, values), want, "{index} {values:?}");
    }
    match first("dns.rrtype:1,-1;") {
        RuleOption::AppNumber { index, .. } => assert_eq!(index, NumberIndex::At { index: -1, oob_or: false }),
        other => panic!("{other:?}"),
    }
    assert!(invalid("dns.rrtype:1,sometimes;").contains("index"));
}

/// Lexed piece by piece, a rules file gives what it gives whole (texts, first lines,
/// encoding errors with their lines), wherever the pieces are cut: continuation lines,
/// comments ending in a backslash, CRLF, blank lines inside a continued rule, a file ending
/// in a continuation or without a final newline.
#[test]
fn rule_file_pieces_lex_like_the_whole_file() {
    use super::lexer::{rule_lines_from, split_rule_file};
    let fragments: [&[u8]; 11] = [
        b"alert ip any any -> any any (sid:1;)",
        b"# note",
        b"\\",
        b"\n",
        b"\n",
        b"\r\n",
        b"  ",
        b"\xff",
        b"x",
        b"\t#",
        b" \\ ",
    ];
    let mut rng = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng() as usize;
    for _ in 0..2000 {
        let mut file = Vec::new();
        for _ in 0..next() % 40 {
            file.extend_from_slice(fragments[next() % fragments.len()]);
        }
        let whole = rule_lines_bytes(&file);
        for piece_bytes in [1, 2, 7, 40, 1 << 20] {
            let pieces = split_rule_file(&file, piece_bytes);
            let mut covered = 0;
            for p in &pieces {
                assert_eq!(p.bytes.start, covered, "pieces follow each other");
                covered = p.bytes.end;
            }
            assert_eq!(covered, file.len(), "the pieces cover the file");
            let lexed: Vec<RuleLine> =
                pieces.iter().flat_map(|p| rule_lines_from(&file[p.bytes.clone()], p.first_line)).collect();
            assert_eq!(lexed, whole, "{:?} cut every {piece_bytes} bytes", String::from_utf8_lossy(&file));
            assert_eq!(pieces.iter().map(|p| p.rules).sum::<usize>(), whole.len());
        }
    }
}

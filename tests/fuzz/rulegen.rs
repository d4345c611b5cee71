//! The grammar of the `rule_packets` target: fuzz input bytes read as decisions that build
//! 1-4 rules from the payload keywords (content and its modifiers, byte_extract, byte_math,
//! byte_test, byte_jump, isdataat, pcre, dsize, flowbits, base64) and then 1-8 packets
//! (TCP/UDP/ICMP over IPv4/IPv6) whose payloads often carry the rules' content bytes, so
//! that the rules' later keywords run instead of stopping at the prefilter.
//!
//! Byte variables are what the grammar is after: every position and count that a keyword
//! may take from a variable is drawn from the variables defined earlier in the same rule
//! half of the time, and byte_math's operators include those that go below zero or
//! overflow (`-`, `<<`), because that is where an unchecked cast once panicked.

use crate::harness::Rng;
use crate::Bytes;

/// Ports the rule headers and the packets share, so that port-specific rules match.
pub const PORTS: [u16; 4] = [53, 80, 1024, 4444];

/// One generated rule set and the content bytes its rules look for.
pub struct Rules {
    pub text: String,
    pub contents: Vec<Vec<u8>>,
}

/// A number for a position, count or value: edge cases (0, the u32 limit, past any
/// payload) as often as small in-payload values.
fn number(b: &mut Bytes<'_>) -> u64 {
    match b.u8() % 8 {
        0 => 0,
        1 => 1,
        2 => u64::from(b.u8() % 16),
        3 => u64::from(b.u8()),
        4 => u64::from(b.u16()),
        5 => [255, 256, 1500, 65535, 65536][b.u8() as usize % 5],
        6 => [u64::from(u32::MAX), u64::from(u32::MAX) - 1, 1 << 31][b.u8() as usize % 3],
        _ => u64::from(b.u8() % 64),
    }
}

/// A number or, half of the time when the rule has defined one, a byte variable.
fn number_or_var(b: &mut Bytes<'_>, vars: &[String]) -> String {
    if !vars.is_empty() && b.u8().is_multiple_of(2) {
        vars[b.u8() as usize % vars.len()].clone()
    } else {
        number(b).to_string()
    }
}

/// The optional tail shared by byte_extract, byte_test, byte_jump and byte_math: how the
/// bytes are read (string base or endianness) and whether relative to the last match.
fn read_mode(b: &mut Bytes<'_>, out: &mut String, string_sep: &str) {
    let sel = b.u8();
    if sel & 1 != 0 {
        out.push_str(",relative");
    }
    match (sel >> 1) % 4 {
        0 => out.push_str(",big"),
        1 => out.push_str(",little"),
        2 => out.push_str(&format!(",string{string_sep}{}", ["dec", "hex", "oct"][(sel >> 3) as usize % 3])),
        _ => {}
    }
}

/// The byte count of a byte keyword: 1-4 for binary reads, up to 10 for strings (the
/// caller's read mode decides which is valid; an invalid one is a parse error, also tested).
fn byte_count(b: &mut Bytes<'_>) -> u64 {
    1 + u64::from(b.u8() % 10)
}

const PCRES: [&str; 8] =
    ["/a+b/", "/^.{2}x/R", "/(a|b)*c/i", "/\\x00{2,}/R", "/[a-z]{3}$/", "/(\\d+)x/R", "/.*/s", "/A{2}/Ri"];
const MATH_OPS: [&str; 6] = ["+", "-", "*", "/", "<<", ">>"];
const TEST_OPS: [&str; 8] = ["<", ">", "=", "!", "<=", ">=", "&", "^"];

/// One rule option (sometimes two, when a modifier follows a content).
fn option(b: &mut Bytes<'_>, vars: &mut Vec<String>, contents: &mut Vec<Vec<u8>>, rule: usize, out: &mut String) {
    let kind = b.u8() % 12;
    option_of(b, kind, vars, contents, rule, out);
}

/// The option of kind `kind` (see `option`).
fn option_of(
    b: &mut Bytes<'_>,
    kind: u8,
    vars: &mut Vec<String>,
    contents: &mut Vec<Vec<u8>>,
    rule: usize,
    out: &mut String,
) {
    let fresh = |vars: &mut Vec<String>| {
        let name = format!("v{rule}_{}", vars.len());
        vars.push(name.clone());
        name
    };
    match kind {
        // content, the keyword most of the others are relative to (twice the weight).
        0 | 1 => {
            let len = 1 + b.u8() as usize % 6;
            let bytes: Vec<u8> = (0..len).map(|_| b.u8()).collect();
            let hex: Vec<String> = bytes.iter().map(|c| format!("{c:02x}")).collect();
            let neg = if b.u8().is_multiple_of(16) { "!" } else { "" };
            out.push_str(&format!("content:{neg}\"|{}|\";", hex.join(" ")));
            let mods = b.u8();
            if mods & 1 != 0 {
                out.push_str(" nocase;");
            }
            for (bit, name) in [(2, "offset"), (4, "depth"), (8, "distance"), (16, "within")] {
                if mods & bit != 0 {
                    out.push_str(&format!(" {name}:{};", number_or_var(b, vars)));
                }
            }
            contents.push(bytes);
        }
        2 => {
            let mut s = format!("byte_extract:{},{},{}", byte_count(b), number(b), fresh(vars));
            read_mode(b, &mut s, ",");
            let sel = b.u8();
            if sel & 1 != 0 {
                s.push_str(&format!(",multiplier {}", number(b).max(1)));
            }
            if sel & 2 != 0 {
                s.push_str(&format!(",align {}", [2, 4][(sel >> 2) as usize % 2]));
            }
            out.push_str(&s);
            out.push(';');
        }
        // byte_math, where a result below zero or past u32 is easiest to reach (twice the weight).
        3 | 4 => {
            let op = MATH_OPS[b.u8() as usize % MATH_OPS.len()];
            let rvalue = number_or_var(b, vars);
            let count = 1 + u64::from(b.u8() % 4);
            let mut s = format!(
                "byte_math:bytes {count},offset {},oper {op},rvalue {rvalue},result {}",
                number(b),
                fresh(vars)
            );
            read_mode(b, &mut s, " ");
            out.push_str(&s);
            out.push(';');
        }
        5 => {
            let op = TEST_OPS[b.u8() as usize % TEST_OPS.len()];
            let neg = if b.u8().is_multiple_of(8) { "!" } else { "" };
            let mut s =
                format!("byte_test:{},{neg}{op},{},{}", byte_count(b), number_or_var(b, vars), number_or_var(b, vars));
            read_mode(b, &mut s, ",");
            out.push_str(&s);
            out.push(';');
        }
        6 => {
            let mut s = format!("byte_jump:{},{}", byte_count(b), number_or_var(b, vars));
            read_mode(b, &mut s, ",");
            let sel = b.u8();
            if sel & 1 != 0 {
                s.push_str(&format!(",multiplier {}", number(b).max(1)));
            }
            if sel & 2 != 0 {
                s.push_str(",from_beginning");
            } else if sel & 4 != 0 {
                s.push_str(",from_end");
            }
            if sel & 8 != 0 {
                let post = number(b) as i64;
                s.push_str(&format!(",post_offset {}", if sel & 16 != 0 { -post } else { post }));
            }
            if sel & 32 != 0 {
                s.push_str(",align");
            }
            out.push_str(&s);
            out.push(';');
        }
        7 => {
            let neg = if b.u8().is_multiple_of(2) { "!" } else { "" };
            let rel = if b.u8().is_multiple_of(2) { ",relative" } else { "" };
            out.push_str(&format!("isdataat:{neg}{}{rel};", number_or_var(b, vars)));
        }
        8 => {
            let flags = ["", "i", "R", "s"][b.u8() as usize % 4];
            out.push_str(&format!("pcre:\"{}{flags}\";", PCRES[b.u8() as usize % PCRES.len()]));
        }
        9 => {
            let (lo, hi) = (b.u16() % 1600, b.u16() % 1600);
            out.push_str(&match b.u8() % 4 {
                0 => format!("dsize:{lo};"),
                1 => format!("dsize:>{lo};"),
                2 => format!("dsize:<{lo};"),
                _ => format!("dsize:{lo}<>{hi};"),
            });
        }
        10 => {
            let cmd = ["set", "isset", "isnotset", "unset", "toggle"][b.u8() as usize % 5];
            out.push_str(&format!("flowbits:{cmd},fb{};", b.u8() % 3));
        }
        // base64 decoding into its own buffer, then a content there.
        _ => {
            let rel = if b.u8().is_multiple_of(2) { ",relative" } else { "" };
            out.push_str(&format!("base64_decode:bytes {},offset {}{rel}; base64_data;", number(b), number(b)));
        }
    }
}

/// Builds 1-4 rules from the input.
pub fn rules(b: &mut Bytes<'_>) -> Rules {
    let count = 1 + b.u8() as usize % 4;
    let mut text = String::new();
    let mut contents = Vec::new();
    for rule in 0..count {
        let proto = ["tcp", "udp", "ip", "icmp"][b.u8() as usize % 4];
        let port = |b: &mut Bytes<'_>| match b.u8() % 3 {
            0 => PORTS[b.u8() as usize % PORTS.len()].to_string(),
            _ => "any".to_string(),
        };
        let (sp, dp) = (port(b), port(b));
        let (sp, dp) = if matches!(proto, "ip" | "icmp") { ("any".into(), "any".into()) } else { (sp, dp) };
        text.push_str(&format!("alert {proto} any {sp} -> any {dp} (msg:\"r{rule}\"; "));
        let mut vars = Vec::new();
        // A quarter of the rules start with a variable feeding a content (byte_math or
        // byte_extract, then content): the shape of the byte-variable faults.
        if b.u8().is_multiple_of(4) {
            let first = if b.u8().is_multiple_of(2) { 3 } else { 2 };
            option_of(b, first, &mut vars, &mut contents, rule, &mut text);
            text.push(' ');
            option_of(b, 0, &mut vars, &mut contents, rule, &mut text);
            text.push(' ');
        }
        for _ in 0..1 + b.u8() % 6 {
            option(b, &mut vars, &mut contents, rule, &mut text);
            text.push(' ');
        }
        text.push_str(&format!("sid:{};)\n", rule + 1));
    }
    Rules { text, contents }
}

/// One packet the input describes, as raw IP (the capture's link type is raw IP).
pub struct Packet {
    pub frame: Vec<u8>,
    pub payload_len: usize,
}

/// A payload: random bytes from one of a few alphabets (binary, ASCII digits for the
/// string reads, small values for counts), with the rules' contents spliced in.
fn payload(b: &mut Bytes<'_>, contents: &[Vec<u8>]) -> Vec<u8> {
    let mut rng = Rng::new(u64::from(b.u32()));
    let len = rng.small(1400);
    let alphabet = b.u8() % 4;
    let mut p: Vec<u8> = (0..len)
        .map(|_| match alphabet {
            0 => rng.byte(),
            1 => b"0123456789abcdefx"[rng.below(17)],
            2 => rng.byte() % 4,
            _ => *rng.pick(b"aAbcx0\x00\xff"),
        })
        .collect();
    for _ in 0..b.u8() % 4 {
        if contents.is_empty() {
            break;
        }
        let c = &contents[rng.below(contents.len())];
        let at = rng.below(p.len() + 1);
        p.splice(at..at, c.iter().copied());
    }
    p
}

/// Builds 1-8 packets of one or two flows between two hosts, both directions.
pub fn packets(b: &mut Bytes<'_>, contents: &[Vec<u8>]) -> Vec<Packet> {
    let count = 1 + b.u8() as usize % 8;
    let mut seq = [1000u32, 5000u32];
    (0..count)
        .map(|_| {
            let sel = b.u8();
            let v6 = sel & 1 != 0;
            let proto = [6u8, 17, if v6 { 58 } else { 1 }][(sel >> 1) as usize % 3];
            let reply = sel & 8 != 0;
            let (mut sport, mut dport) = (PORTS[b.u8() as usize % 4], PORTS[b.u8() as usize % 4]);
            if reply {
                std::mem::swap(&mut sport, &mut dport);
            }
            let data = payload(b, contents);
            let mut l4 = Vec::new();
            match proto {
                6 => {
                    let dir = usize::from(reply);
                    l4.extend_from_slice(&sport.to_be_bytes());
                    l4.extend_from_slice(&dport.to_be_bytes());
                    l4.extend_from_slice(&seq[dir].to_be_bytes());
                    l4.extend_from_slice(&seq[1 - dir].to_be_bytes());
                    let flags = if sel & 16 != 0 { 0x02 } else { 0x18 };
                    l4.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
                    seq[dir] = seq[dir].wrapping_add(data.len() as u32);
                }
                17 => {
                    l4.extend_from_slice(&sport.to_be_bytes());
                    l4.extend_from_slice(&dport.to_be_bytes());
                    l4.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
                    l4.extend_from_slice(&[0, 0]);
                }
                _ => l4.extend_from_slice(&[if v6 { 128 } else { 8 }, 0, 0, 0, 0, 1, 0, 1]),
            }
            l4.extend_from_slice(&data);
            let (a, z) = if reply { (2u8, 1u8) } else { (1, 2) };
            let mut frame = Vec::new();
            if v6 {
                frame.extend_from_slice(&[0x60, 0, 0, 0]);
                frame.extend_from_slice(&(l4.len() as u16).to_be_bytes());
                frame.extend_from_slice(&[proto, 64]);
                for host in [a, z] {
                    frame.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
                    frame.extend_from_slice(&[0; 11]);
                    frame.push(host);
                }
            } else {
                frame.extend_from_slice(&[0x45, 0]);
                frame.extend_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
                frame.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, a, 10, 0, 0, z]);
            }
            frame.extend_from_slice(&l4);
            Packet { frame, payload_len: data.len() }
        })
        .collect()
}

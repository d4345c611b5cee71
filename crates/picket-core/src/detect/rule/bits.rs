//! Flow and host state keywords: `flowbits`, `flowint`, `xbits` and `hostbits` (xbits
//! tracked by host).

use super::error::OptionError;
use super::values::{bad_part, parse_num_or_var, parse_u32, unknown_option, NumOrVar};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowbitsCmd {
    Set,
    Unset,
    Toggle,
    IsSet,
    IsNotSet,
    NoAlert,
}

/// How several names in one flowbits option combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitsGroup {
    Single,
    /// `a|b`: any of them.
    Any,
    /// `a&b`: all of them.
    All,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flowbits {
    pub cmd: FlowbitsCmd,
    pub names: Vec<String>,
    pub group: BitsGroup,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowintOp {
    Set,
    Add,
    Sub,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    IsSet,
    NotSet,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flowint {
    pub name: String,
    pub op: FlowintOp,
    pub value: Option<NumOrVar>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XbitsTrack {
    IpSrc,
    IpDst,
    IpPair,
    Tx,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xbits {
    pub cmd: FlowbitsCmd,
    pub name: String,
    pub track: Option<XbitsTrack>,
    pub expire: Option<u32>,
}

fn bits_cmd(text: &str) -> Option<FlowbitsCmd> {
    Some(match text {
        "set" => FlowbitsCmd::Set,
        "unset" => FlowbitsCmd::Unset,
        "toggle" => FlowbitsCmd::Toggle,
        "isset" => FlowbitsCmd::IsSet,
        "isnotset" => FlowbitsCmd::IsNotSet,
        "noalert" => FlowbitsCmd::NoAlert,
        _ => None?,
    })
}

fn is_bit_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|c| c.is_ascii_graphic() && !matches!(c, b',' | b'|' | b'&' | b';' | b'"'))
}

pub(crate) fn parse_flowbits(value: &str) -> Result<Flowbits, OptionError> {
    let (cmd_text, names_text) = match value.split_once(',') {
        Some((c, n)) => (c.trim(), Some(n.trim())),
        None => (value.trim(), None),
    };
    let cmd = bits_cmd(cmd_text).ok_or_else(|| bad_part("flowbits", "command", cmd_text))?;
    let Some(names_text) = names_text else {
        if cmd == FlowbitsCmd::NoAlert {
            return Ok(Flowbits { cmd, names: Vec::new(), group: BitsGroup::Single });
        }
        return Err(OptionError::FlowbitsNeedsName { command: cmd_text.to_string() });
    };
    if cmd == FlowbitsCmd::NoAlert {
        return Err(OptionError::Constraint { keyword: "flowbits", rule: "noalert takes no name" });
    }
    let (group, sep) = if names_text.contains('|') {
        (BitsGroup::Any, '|')
    } else if names_text.contains('&') {
        (BitsGroup::All, '&')
    } else {
        (BitsGroup::Single, ',')
    };
    if names_text.contains('|') && names_text.contains('&') {
        return Err(OptionError::Constraint { keyword: "flowbits", rule: "cannot mix '|' and '&'" });
    }
    if group == BitsGroup::Any && !matches!(cmd, FlowbitsCmd::IsSet | FlowbitsCmd::IsNotSet) {
        return Err(OptionError::Constraint { keyword: "flowbits", rule: "'|' groups only work with isset/isnotset" });
    }
    let names: Vec<String> = if group == BitsGroup::Single {
        vec![names_text.to_string()]
    } else {
        names_text.split(sep).map(|n| n.trim().to_string()).collect()
    };
    if let Some(bad) = names.iter().find(|n| !is_bit_name(n)) {
        return Err(bad_part("flowbits", "name", bad));
    }
    Ok(Flowbits { cmd, names, group })
}

pub(crate) fn parse_flowint(value: &str) -> Result<Flowint, OptionError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(OptionError::Usage { keyword: "flowint", usage: "name, operator[, value]" });
    }
    let name = parts[0];
    if !is_bit_name(name) {
        return Err(bad_part("flowint", "name", name));
    }
    let op = match parts[1] {
        "=" => FlowintOp::Set,
        "+" => FlowintOp::Add,
        "-" => FlowintOp::Sub,
        "==" => FlowintOp::Eq,
        "!=" => FlowintOp::Ne,
        "<" => FlowintOp::Lt,
        "<=" => FlowintOp::Le,
        ">" => FlowintOp::Gt,
        ">=" => FlowintOp::Ge,
        "isset" => FlowintOp::IsSet,
        "notset" | "isnotset" => FlowintOp::NotSet,
        other => return Err(bad_part("flowint", "operator", other)),
    };
    let needs_value = !matches!(op, FlowintOp::IsSet | FlowintOp::NotSet);
    let value = match (needs_value, parts.get(2)) {
        (true, Some(v)) => Some(parse_num_or_var(v, "flowint")?),
        (true, None) => return Err(OptionError::FlowintNeedsValue { operator: parts[1].to_string() }),
        (false, None) => None,
        (false, Some(_)) => {
            return Err(OptionError::Constraint { keyword: "flowint", rule: "isset/notset take no value" })
        }
    };
    Ok(Flowint { name: name.to_string(), op, value })
}

pub(crate) fn parse_xbits(value: &str) -> Result<Xbits, OptionError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let cmd = bits_cmd(parts[0]).ok_or_else(|| bad_part("xbits", "command", parts[0]))?;
    if cmd == FlowbitsCmd::NoAlert {
        return Ok(Xbits { cmd, name: String::new(), track: None, expire: None });
    }
    let name = parts.get(1).ok_or(OptionError::MissingPart { keyword: "xbits", part: "name" })?;
    if !is_bit_name(name) {
        return Err(bad_part("xbits", "name", name));
    }
    let mut track = None;
    let mut expire = None;
    for item in &parts[2..] {
        let (key, arg) = item.split_once(char::is_whitespace).map(|(k, a)| (k, a.trim())).unwrap_or((item, ""));
        match key {
            "track" => {
                track = Some(match arg {
                    "ip_src" => XbitsTrack::IpSrc,
                    "ip_dst" => XbitsTrack::IpDst,
                    "ip_pair" => XbitsTrack::IpPair,
                    "tx" => XbitsTrack::Tx,
                    other => return Err(bad_part("xbits", "track", other)),
                })
            }
            "expire" => {
                let e = parse_u32(arg, "xbits expire")?;
                if e == 0 {
                    return Err(OptionError::Constraint { keyword: "xbits", rule: "expire must be positive" });
                }
                expire = Some(e)
            }
            _ => return Err(unknown_option("xbits", item)),
        }
    }
    if track.is_none() {
        return Err(OptionError::MissingPart { keyword: "xbits", part: "track" });
    }
    Ok(Xbits { cmd, name: name.to_string(), track, expire })
}

/// `hostbits:<cmd>,<name>[,src|dst][,expire <secs>]` is xbits tracked by host: the same
/// per-host table and namespace (Suricata documents them as equivalent).
pub(crate) fn parse_hostbits(v: &str) -> Result<Xbits, OptionError> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let cmd = match parts.first().copied().unwrap_or("") {
        "set" => FlowbitsCmd::Set,
        "unset" => FlowbitsCmd::Unset,
        "toggle" => FlowbitsCmd::Toggle,
        "isset" => FlowbitsCmd::IsSet,
        "isnotset" => FlowbitsCmd::IsNotSet,
        "noalert" => FlowbitsCmd::NoAlert,
        other => return Err(bad_part("hostbits", "command", other)),
    };
    if cmd == FlowbitsCmd::NoAlert {
        if parts.len() > 1 {
            return Err(OptionError::HostbitsNoalertName);
        }
        return Ok(Xbits { cmd, name: String::new(), track: None, expire: None });
    }
    let name =
        parts.get(1).filter(|n| !n.is_empty()).ok_or(OptionError::MissingPart { keyword: "hostbits", part: "name" })?;
    if !name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')) {
        return Err(bad_part("hostbits", "name", name));
    }
    let mut track = XbitsTrack::IpSrc;
    let mut expire = None;
    for item in parts.iter().skip(2) {
        match *item {
            "src" => track = XbitsTrack::IpSrc,
            "dst" => track = XbitsTrack::IpDst,
            "both" => {
                return Err(OptionError::Constraint {
                    keyword: "hostbits",
                    rule: "direction 'both' is not supported (nor by Suricata)",
                })
            }
            other => match other.split_once(char::is_whitespace) {
                Some(("expire", secs)) => {
                    let e = parse_u32(secs, "hostbits expire")?;
                    if e == 0 {
                        return Err(OptionError::Constraint { keyword: "hostbits", rule: "expire must be positive" });
                    }
                    expire = Some(e);
                }
                _ => return Err(unknown_option("hostbits", other)),
            },
        }
    }
    Ok(Xbits { cmd, name: name.to_string(), track: Some(track), expire })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostbits_forms() {
        let x = |v| parse_hostbits(v).expect("valid value");
        let err = |v| parse_hostbits(v).expect_err("must be rejected");
        let set = x("set,abc,dst");
        assert_eq!((set.cmd, set.name.as_str(), set.track), (FlowbitsCmd::Set, "abc", Some(XbitsTrack::IpDst)));
        assert_eq!(x("isset,abc").track, Some(XbitsTrack::IpSrc));
        assert_eq!(x("set,abc,src,expire 30").expire, Some(30));
        assert_eq!(x("noalert").cmd, FlowbitsCmd::NoAlert);
        assert!(err("set,abc,both").to_string().contains("both"));
        assert_eq!(err("isset"), OptionError::MissingPart { keyword: "hostbits", part: "name" });
        assert_eq!(err("flip,abc").to_string(), "hostbits: invalid command 'flip'");
        assert_eq!(err("noalert,abc").to_string(), "hostbits:noalert takes no name");
    }
}

//! `threshold` and `detection_filter` in rules; the same fields make the lines of
//! `threshold.config` (see `config`).

use super::error::OptionError;
use super::values::{bad_part, parse_u32, unknown_option};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThresholdType {
    Limit,
    Threshold,
    Both,
    Backoff,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    BySrc,
    ByDst,
    ByRule,
    ByBoth,
    ByFlow,
    /// `by_either`, suppress only.
    ByEither,
}

impl Track {
    pub fn parse(text: &str) -> Option<Track> {
        Some(match text {
            "by_src" => Track::BySrc,
            "by_dst" => Track::ByDst,
            "by_rule" => Track::ByRule,
            "by_both" => Track::ByBoth,
            "by_flow" => Track::ByFlow,
            "by_either" => Track::ByEither,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    pub kind: ThresholdType,
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    /// `backoff` only.
    pub multiplier: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetectionFilter {
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    /// `unique_on src_port|dst_port`: count distinct ports instead of matches.
    pub unique_on: Option<UniqueOn>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueOn {
    SrcPort,
    DstPort,
}

/// Parses `type X, track Y, count N, seconds N[, multiplier N]` in any order.
/// `with_type` is false for detection_filter, which has no type but may have `unique_on`.
pub fn parse_threshold_fields(value: &str, with_type: bool) -> Result<(Threshold, Option<UniqueOn>), OptionError> {
    let mut unique_on = None;
    let mut kind = None;
    let mut track = None;
    let mut count = None;
    let mut seconds = None;
    let mut multiplier = None;
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, arg) = item
            .split_once(char::is_whitespace)
            .map(|(k, a)| (k, a.trim()))
            .ok_or_else(|| OptionError::ThresholdItemNeedsValue { item: item.to_string() })?;
        match key {
            "type" if with_type => {
                kind = Some(match arg {
                    "limit" => ThresholdType::Limit,
                    "threshold" => ThresholdType::Threshold,
                    "both" => ThresholdType::Both,
                    "backoff" => ThresholdType::Backoff,
                    other => return Err(bad_part("threshold", "type", other)),
                })
            }
            "track" => track = Some(Track::parse(arg).ok_or_else(|| bad_part("threshold", "track", arg))?),
            "count" => count = Some(parse_u32(arg, "threshold count")?),
            "seconds" => seconds = Some(parse_u32(arg, "threshold seconds")?),
            "multiplier" => multiplier = Some(parse_u32(arg, "threshold multiplier")?),
            "unique_on" if !with_type => {
                unique_on = Some(match arg {
                    "src_port" => UniqueOn::SrcPort,
                    "dst_port" => UniqueOn::DstPort,
                    other => return Err(bad_part("detection_filter", "unique_on", other)),
                })
            }
            _ => return Err(unknown_option("threshold", item)),
        }
    }
    let kind = if with_type {
        kind.ok_or(OptionError::MissingPart { keyword: "threshold", part: "type" })?
    } else {
        ThresholdType::Threshold
    };
    let track = track.ok_or(OptionError::MissingPart { keyword: "threshold", part: "track" })?;
    let count = count.ok_or(OptionError::MissingPart { keyword: "threshold", part: "count" })?;
    let seconds = if kind == ThresholdType::Backoff {
        if multiplier.is_none() {
            return Err(OptionError::Constraint { keyword: "threshold", rule: "backoff needs multiplier" });
        }
        seconds.unwrap_or(0)
    } else {
        seconds.ok_or(OptionError::MissingPart { keyword: "threshold", part: "seconds" })?
    };
    if track == Track::ByEither {
        return Err(OptionError::Constraint {
            keyword: "threshold",
            rule: "track by_either is only valid for suppress",
        });
    }
    Ok((Threshold { kind, track, count, seconds, multiplier }, unique_on))
}

pub(crate) fn parse_threshold(value: &str) -> Result<Threshold, OptionError> {
    parse_threshold_fields(value, true).map(|(t, _)| t)
}

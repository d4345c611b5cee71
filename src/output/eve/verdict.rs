//! eve's `verdict` object, written by alert and drop records alike (eve-log `verdict: yes`).

use crate::inspect::{Reject, RejectReply, RejectTarget, Verdict};
use crate::output::json::JsonObject;

/// eve's `verdict` object: what was done with the packet. `to_client`/`to_server` name the
/// reject target as Suricata does: the source of the rejected packet is `to_client`.
/// The key is `reject_target`, as Suricata's EVE schema spells it. `passed`: a pass rule
/// matched the packet (an alert's packet only), so a packet not blocked is "pass".
pub fn write_verdict(o: &mut JsonObject<'_>, verdict: Verdict, passed: bool) {
    o.open("verdict");
    match verdict {
        Verdict::Pass => {
            o.str("action", if passed { "pass" } else { "alert" });
        }
        Verdict::Drop => {
            o.str("action", "drop");
        }
        Verdict::Reject(Reject { reply, to }) => {
            let target = match to {
                RejectTarget::Source => "to_client",
                RejectTarget::Destination => "to_server",
                RejectTarget::Both => "both",
            };
            let kind = match reply {
                RejectReply::TcpReset => "tcp-reset",
                RejectReply::IcmpUnreachable => "icmp-prohib",
            };
            o.str("action", "drop").str("reject_target", target).open_list("reject").item_str(kind).close_list();
        }
    }
    o.close();
}

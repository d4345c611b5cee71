//! A `pass` rule with the `alert` keyword (Suricata 8): its match passes the packet and is
//! logged as an alert ("allowed"); without the keyword a pass is silent.

use super::tests::{feed, inspector, udp, Collect, Seen};
use super::*;

const RULES: &str = "pass udp any any -> any any (content:\"ok\"; alert; sid:2;)\n\
                     drop udp any any -> any any (content:\"ok\"; sid:3;)\n";

fn logged(sink: &Collect) -> Vec<(u32, bool)> {
    sink.0
        .iter()
        .filter_map(|(_, s)| match s {
            Seen::Alert { sid, blocked, .. } => Some((*sid, *blocked)),
            Seen::Drop { .. } => Some((0, true)),
            _ => None,
        })
        .collect()
}

#[test]
fn pass_with_alert_keyword_is_logged_and_passes() {
    let mut insp = inspector(RULES, true);
    let mut sink = Collect::default();
    let verdicts = feed(&mut insp, &[udp(b"ok")], &mut sink);
    assert_eq!(verdicts, [Verdict::Pass], "the pass rule wins over the drop");
    assert_eq!(logged(&sink), [(2, false)], "one alert, of the pass rule, and no drop");

    let mut insp = inspector(&RULES.replace(" alert;", ""), true);
    let mut sink = Collect::default();
    assert_eq!(feed(&mut insp, &[udp(b"ok")], &mut sink), [Verdict::Pass]);
    assert!(logged(&sink).is_empty(), "a plain pass logs nothing: {:?}", logged(&sink));
}

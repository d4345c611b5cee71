//! What suppressions, thresholds and rate_filters do to a rule's action (Suricata's
//! PacketAlertFinalize): a suppressed or silenced match still drops, a threshold not yet
//! reached does nothing, a rate_filter swaps the action and says so.

use super::tests::{engine_with, inspect_with, udp, Opts, CLIENT, SERVER};
use super::*;
use crate::detect::rule::RuleVars;

const OTHER: [u8; 4] = [8, 8, 8, 8];

fn thresholds(text: &str) -> ThresholdConfig {
    let (cfg, errors) = ThresholdConfig::parse("threshold.config", text, &RuleVars::default());
    assert!(errors.is_empty(), "{errors:?}");
    cfg
}

/// One match as finalize left it: (action, logged, changed by a rate_filter); `None` when
/// the match neither alerts nor acts.
type Seen = Option<(Action, bool, bool)>;

fn run(e: &DetectEngine, ctx: &mut DetectCtx, src: [u8; 4], dst: [u8; 4], secs: u64, flow: Option<FlowInfo>) -> Seen {
    let alerts = inspect_with(e, ctx, &udp(src, 1, dst, 2, b"X"), Opts { secs, flow, ..Default::default() }, None);
    assert!(alerts.len() <= 1, "one rule");
    alerts.first().map(|a| (a.action, !a.silent, a.rate_filtered))
}

const DROPS: Seen = Some((Action::Drop, true, false));
const SILENT_DROP: Seen = Some((Action::Drop, false, false));

#[test]
fn suppressed_drop_still_drops() {
    let rule = r#"drop udp any any -> any any (msg:"d"; content:"X"; sid:1;)"#;
    // Matches from the client, from the server, and between two other hosts.
    for (config, expected) in [
        ("suppress gen_id 1, sig_id 1, track by_src, ip 192.168.1.10\n", [SILENT_DROP, DROPS, DROPS]),
        ("suppress gen_id 1, sig_id 1, track by_either, ip 192.168.1.10\n", [SILENT_DROP, SILENT_DROP, DROPS]),
        ("suppress gen_id 1, sig_id 1\n", [SILENT_DROP; 3]),
    ] {
        let e = engine_with(rule, thresholds(config));
        let mut ctx = e.new_ctx();
        let seen = [(CLIENT, SERVER), (SERVER, CLIENT), (OTHER, SERVER)]
            .map(|(src, dst)| run(&e, &mut ctx, src, dst, 1, None));
        assert_eq!(seen, expected, "{config}");
    }
    // An alert rule's suppressed match is gone altogether.
    let e = engine_with(
        r#"alert udp any any -> any any (msg:"a"; content:"X"; sid:1;)"#,
        thresholds("suppress gen_id 1, sig_id 1, track by_src, ip 192.168.1.10\n"),
    );
    assert_eq!(run(&e, &mut e.new_ctx(), CLIENT, SERVER, 1, None), None);
}

#[test]
fn limit_silences_but_threshold_waits() {
    let e = engine_with(
        r#"drop udp any any -> any any (msg:"l"; content:"X"; threshold:type limit,track by_src,count 1,seconds 60; sid:1;)"#,
        ThresholdConfig::default(),
    );
    let mut ctx = e.new_ctx();
    let seen: Vec<Seen> = (0..3).map(|i| run(&e, &mut ctx, CLIENT, SERVER, 10 + i, None)).collect();
    assert_eq!(seen, vec![DROPS, SILENT_DROP, SILENT_DROP], "past the limit the drop is silent");

    let e = engine_with(
        r#"drop udp any any -> any any (msg:"t"; content:"X"; threshold:type threshold,track by_src,count 3,seconds 60; sid:1;)"#,
        ThresholdConfig::default(),
    );
    let mut ctx = e.new_ctx();
    let seen: Vec<Seen> = (0..4).map(|i| run(&e, &mut ctx, CLIENT, SERVER, 10 + i, None)).collect();
    assert_eq!(seen, vec![None, None, DROPS, None], "below the threshold nothing is dropped");

    let e = engine_with(
        r#"drop udp any any -> any any (msg:"b"; content:"X"; threshold:type both,track by_src,count 2,seconds 60; sid:1;)"#,
        ThresholdConfig::default(),
    );
    let mut ctx = e.new_ctx();
    let seen: Vec<Seen> = (0..3).map(|i| run(&e, &mut ctx, CLIENT, SERVER, 10 + i, None)).collect();
    assert_eq!(seen, vec![None, DROPS, SILENT_DROP]);
}

#[test]
fn rate_filter_switches_the_action_until_its_timeout() {
    let e = engine_with(
        r#"alert udp any any -> any any (msg:"r"; content:"X"; sid:7;)"#,
        thresholds("rate_filter gen_id 1, sig_id 7, track by_rule, count 2, seconds 60, new_action drop, timeout 10\n"),
    );
    let mut ctx = e.new_ctx();
    let alerts = Some((Action::Alert, true, false));
    let rated = Some((Action::Drop, true, true));
    let seen: Vec<Seen> =
        [100, 101, 102, 105, 112].iter().map(|&s| run(&e, &mut ctx, CLIENT, SERVER, s, None)).collect();
    assert_eq!(seen, vec![alerts, alerts, rated, rated, rated]);
    // More than `timeout` whole seconds after the switch the rule's own action is back.
    assert_eq!(run(&e, &mut ctx, CLIENT, SERVER, 113, None), alerts);
}

#[test]
fn rate_filter_tracks() {
    let rule = r#"alert udp any any -> any any (msg:"r"; content:"X"; sid:7;)"#;
    let rated = Some((Action::Reject, true, true));
    let alerts = Some((Action::Alert, true, false));
    // by_both: the pair counts both directions together, as Suricata's ip pair does.
    let e = engine_with(
        rule,
        thresholds(
            "rate_filter gen_id 1, sig_id 7, track by_both, count 1, seconds 60, new_action reject, timeout 30\n",
        ),
    );
    let mut ctx = e.new_ctx();
    assert_eq!(run(&e, &mut ctx, CLIENT, SERVER, 5, None), alerts);
    assert_eq!(run(&e, &mut ctx, SERVER, CLIENT, 6, None), rated);
    assert_eq!(run(&e, &mut ctx, OTHER, SERVER, 6, None), alerts, "another pair");
    // by_dst: each destination on its own.
    let e = engine_with(
        rule,
        thresholds(
            "rate_filter gen_id 1, sig_id 7, track by_dst, count 1, seconds 60, new_action reject, timeout 30\n",
        ),
    );
    let mut ctx = e.new_ctx();
    assert_eq!(run(&e, &mut ctx, CLIENT, SERVER, 5, None), alerts);
    assert_eq!(run(&e, &mut ctx, SERVER, CLIENT, 6, None), alerts);
    assert_eq!(run(&e, &mut ctx, OTHER, SERVER, 6, None), rated);
    // by_flow, and a new action that lets a drop rule's packets through.
    let e = engine_with(
        r#"drop udp any any -> any any (msg:"d"; content:"X"; sid:7;)"#,
        thresholds(
            "rate_filter gen_id 1, sig_id 7, track by_flow, count 2, seconds 60, new_action alert, timeout 30\n",
        ),
    );
    let mut ctx = e.new_ctx();
    let flow = |id| Some(FlowInfo { flow_id: id, to_server: true, ..Default::default() });
    let seen: Vec<Seen> = (0..3).map(|i| run(&e, &mut ctx, CLIENT, SERVER, 5 + i, flow(1))).collect();
    assert_eq!(seen, vec![DROPS, DROPS, Some((Action::Alert, true, true))]);
    assert_eq!(run(&e, &mut ctx, CLIENT, SERVER, 9, flow(2)), DROPS, "another flow");
}

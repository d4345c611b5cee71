//! eve records of application-layer transactions (`http`, `dns`, `tls`, `ssh`,
//! `fileinfo`): which records each protocol's finished transaction becomes. Their shared
//! header is in [`super::header`].
//!
//! A transaction is reported once, when it is done (`Event::Transaction`), from the worker
//! that holds its flow; its records are formatted there, so logging them costs no extra
//! pass. Addresses are the flow's, client to server, as Suricata writes app-layer records
//! (a DNS response and a downloaded file go server to client).

use super::options::AlertLogOptions;
use super::{dns, fileinfo, http, http2, smtp, ssh, tls};
use crate::output::merge::{EventBuf, Sink};
use picket_core::inspect::{AppTx, TxEvent};

/// Appends the records `t` is logged as (none when their types are not enabled).
pub fn write_transaction(lines: &mut EventBuf, key: u64, sub: u64, t: &TxEvent<'_>, opts: &AlertLogOptions) {
    match t.tx {
        AppTx::Http(tx) => {
            if opts.types.http {
                // eve-log's `xff:` in extra-data mode adds the proxied client's address.
                let xff = opts.xff.as_ref().filter(|x| !x.overwrite).and_then(|x| x.address(tx));
                lines.push_sub(Sink::Eve, key, sub, |buf| http::write_http(buf, t, tx, &opts.http, xff));
            }
            if opts.types.files {
                for (dir, file) in tx.files() {
                    lines.push_sub(Sink::Eve, key, sub, |buf| fileinfo::write_fileinfo(buf, t, tx, dir, file));
                }
            }
        }
        AppTx::Dns(tx) => {
            if opts.types.dns && opts.dns.logs(tx) {
                lines.push_sub(Sink::Eve, key, sub, |buf| dns::write_dns(buf, t, tx, &opts.dns));
            }
        }
        AppTx::Ssh(st) => {
            if opts.types.ssh && st.has_record() {
                lines.push_sub(Sink::Eve, key, sub, |buf| ssh::write_ssh(buf, t, st, &opts.ssh));
            }
        }
        AppTx::Smtp(v) => {
            if opts.types.smtp {
                lines.push_sub(Sink::Eve, key, sub, |buf| smtp::write_smtp(buf, t, &v, &opts.smtp));
            }
            if opts.types.files {
                for file in v.tx.files() {
                    lines.push_sub(Sink::Eve, key, sub, |buf| smtp::write_smtp_fileinfo(buf, t, &v, file));
                }
            }
        }
        AppTx::Http2(tx) => {
            match tx.doh.as_deref().and_then(|d| d.dns_tx()) {
                Some(dns) if opts.types.doh2 && opts.dns.logs(dns) => {
                    lines.push_sub(Sink::Eve, key, sub, |buf| http2::write_doh2(buf, t, tx, dns, &opts.dns));
                }
                Some(_) => {}
                None if opts.types.http2 && tx.has_record() => {
                    lines.push_sub(Sink::Eve, key, sub, |buf| http2::write_http2(buf, t, tx));
                }
                None => {}
            }
            if opts.types.files {
                for (dir, file) in tx.http.files() {
                    lines.push_sub(Sink::Eve, key, sub, |buf| http2::write_fileinfo2(buf, t, tx, dir, file));
                }
            }
        }
        AppTx::Tls(st) => {
            if opts.types.tls && st.logs_record(opts.tls.session_resumption) {
                lines.push_sub(Sink::Eve, key, sub, |buf| tls::write_tls(buf, t, st, &opts.tls));
            }
        }
    }
}

/// Fingerprints Suricata computes when a rule inspects them, whatever the YAML says: JA3
/// and JA3S for `ja3.*`/`ja3s.*` rules, HASSH for `ssh.hassh*` rules. Their records and
/// alerts then carry them too. `uses` tells whether a rule inspects a buffer.
pub fn enable_rule_fingerprints(opts: &mut AlertLogOptions, uses: impl Fn(&str) -> bool) {
    if ["ja3.hash", "ja3.string", "ja3s.hash", "ja3s.string"].into_iter().any(&uses) {
        opts.tls.ja3 = true;
    }
    if ["ssh.hassh", "ssh.hassh.string", "ssh.hassh.server", "ssh.hassh.server.string"].into_iter().any(&uses) {
        opts.ssh.hassh = true;
    }
}

//! eve `ssh` records: one per SSH session, when both sides sent NEWKEYS (the key exchange
//! is over and the rest is encrypted), or when its flow ends, as Suricata's.

use super::header::write_tx_header;
use picket_core::applayer::ssh::SshState;
use picket_core::inspect::TxEvent;

/// What `ssh` records (and alerts' `ssh` objects) carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SshLogOptions {
    /// Each side's HASSH (`app-layer.protocols.ssh.hassh: yes`, off by default as in
    /// Suricata).
    pub hassh: bool,
}

/// One eve `ssh` line for the session `st` of `t`.
pub fn write_ssh(buf: &mut Vec<u8>, t: &TxEvent<'_>, st: &SshState, opts: &SshLogOptions) {
    let mut o = write_tx_header(buf, t, "ssh");
    o.open("ssh");
    st.write_record(&mut o, opts.hassh);
    o.close();
    o.finish();
}

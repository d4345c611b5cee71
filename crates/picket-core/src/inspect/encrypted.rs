//! Encrypted payload (Suricata's `encryption-handling: track-only`, the default for TLS
//! and SSH): once a flow's payload is ciphertext, content rules cannot meet it, so the
//! engine stops inspecting it while the parser keeps tracking the session.
//!
//! - **TLS**: from the first application-data record (either direction; a client's 0-RTT
//!   data before the ServerHello does not count), as Suricata's NO_INSPECTION_PAYLOAD.
//! - **SSH**: once both sides sent NEWKEYS, as Suricata's NO_INSPECTION.
//!
//! The packet on which the parser saw it is inspected in full (its stream data included);
//! every later packet of the flow is inspected without its payload (Suricata's
//! PKT_NOPAYLOAD_INSPECTION: [`crate::detect::engine::DetectPacket::no_payload`]) and the
//! TCP stream gives detection no more data ([`crate::stream::TcpReassembly::disable_raw`]),
//! not at flow end either. Header, flow and app-layer rules (`tls.sni`, `ssh.proto`,
//! certificates, ...) go on matching. With `full` the payload is inspected as before;
//! `bypass` is handled by [`super::bypass`].

use crate::applayer::layer::AppLayer;
use crate::counters::CounterSet;
use crate::settings::EncryptionHandling;

/// The two protocols' `encryption-handling`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncryptedSettings {
    pub tls: EncryptionHandling,
    pub ssh: EncryptionHandling,
}

/// Why a flow's payload is no longer inspected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encrypted {
    Tls,
    Ssh,
}

impl EncryptedSettings {
    /// Whether the flow's payload turned to ciphertext under `track-only` handling.
    pub(super) fn payload_encrypted(&self, app: &AppLayer) -> Option<Encrypted> {
        if self.tls == EncryptionHandling::TrackOnly && app.tls_application_data() {
            Some(Encrypted::Tls)
        } else if self.ssh == EncryptionHandling::TrackOnly && app.ssh_keys_exchanged() {
            Some(Encrypted::Ssh)
        } else {
            None
        }
    }
}

/// picket's own counters (Suricata has none): flows whose payload inspection stopped, and
/// the packets inspected without their payload since.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct EncryptedCounters {
    pub tls_flows: u64,
    pub ssh_flows: u64,
    pub packets: u64,
}

impl EncryptedCounters {
    pub fn count(&mut self, why: Encrypted) {
        match why {
            Encrypted::Tls => self.tls_flows += 1,
            Encrypted::Ssh => self.ssh_flows += 1,
        }
    }

    pub fn add_to(&self, s: &mut CounterSet) {
        s.add("picket.encrypted.tls_flows", self.tls_flows);
        s.add("picket.encrypted.ssh_flows", self.ssh_flows);
        s.add("picket.encrypted.packets_without_payload", self.packets);
    }
}

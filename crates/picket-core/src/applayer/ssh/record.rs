//! The `ssh` object of eve records, as Suricata writes it: a `client` and a `server`
//! object for each side whose banner was seen.

use super::{SshSide, SshState};
use crate::record::RecordWriter;

impl SshState {
    /// Whether the session has anything to log (a banner on either side).
    pub fn has_record(&self) -> bool {
        self.client().banner_done() || self.server().banner_done()
    }

    /// Writes the fields of the `ssh` object into the open object of `w`; the HASSH of
    /// each side only `with_hassh` (Suricata's `app-layer.protocols.ssh.hassh`).
    pub fn write_record(&self, w: &mut dyn RecordWriter, with_hassh: bool) {
        for (key, side) in [("client", self.client()), ("server", self.server())] {
            if side.banner_done() {
                w.open(key);
                write_side(w, side, with_hassh);
                w.close();
            }
        }
    }
}

fn write_side(w: &mut dyn RecordWriter, side: &SshSide, with_hassh: bool) {
    w.bytes("proto_version", &side.proto_version);
    if !side.software_version.is_empty() {
        w.bytes("software_version", &side.software_version);
    }
    if with_hassh && !side.hassh.is_empty() {
        w.open("hassh");
        w.str("hash", &side.hassh);
        w.bytes("string", &side.hassh_string);
        w.close();
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::side_stream;
    use super::*;
    use crate::record::value::record;
    use crate::stream::Direction;

    #[test]
    fn eve_object_as_suricata() {
        let mut st = SshState::default();
        let mut c = Default::default();
        assert!(!st.has_record());
        st.parse(Direction::ToClient, b"SSH-2.0-OpenSSH_7.4\r\n", &mut c);
        assert_eq!(
            record(|w| st.write_record(w, true)),
            serde_json::json!({"server":{"proto_version":"2.0","software_version":"OpenSSH_7.4"}})
        );
        st.parse(Direction::ToServer, &side_stream("SSH-2.0-PuTTY\r\n"), &mut c);
        let v = record(|w| st.write_record(w, true));
        assert_eq!(v["client"]["software_version"], "PuTTY");
        assert_eq!(v["client"]["hassh"]["string"], "l0;l2;l4;l6");
        assert!(record(|w| st.write_record(w, false))["client"].get("hassh").is_none());
    }
}

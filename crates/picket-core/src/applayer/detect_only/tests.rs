use super::probes::{self, Probe};
use super::*;
use crate::applayer::probe::{probe_with, DetectionPorts, ProbeResult, Transport};
use proptest::prelude::*;
use Direction::{ToClient, ToServer};

fn detect(tcp: bool, dir: Direction, data: &[u8], server_port: u16) -> Result<AppProto, Probe> {
    DetectOnlySettings::default().detect(tcp, dir, data, (50000, server_port))
}

/// Every protocol enabled (dnp3, enip, modbus and pgsql are off by default).
fn all_enabled() -> DetectOnlySettings {
    let mut s = DetectOnlySettings::default();
    for e in &TABLE {
        for tcp in [true, false] {
            s.apply(e.proto, tcp, &ProtoOverride { enabled: Some(true), ..ProtoOverride::default() });
        }
    }
    s
}

#[test]
fn patterns_on_any_port() {
    assert_eq!(detect(true, ToClient, b"RFB 003.008\n", 7000), Ok(AppProto::Rfb));
    assert_eq!(detect(true, ToServer, b"rfb 003.003\n", 7000), Ok(AppProto::Rfb));
    assert_eq!(detect(true, ToServer, probes::HTTP2_PREFACE, 8080), Ok(AppProto::Http2));
    assert_eq!(detect(true, ToServer, &probes::HTTP2_PREFACE[..10], 8080), Err(Probe::NeedMore));
    // SMB2 negotiate in a NetBIOS session message.
    let smb2 = [0, 0, 0, 0x44, 0xfe, b'S', b'M', b'B', 64, 0];
    assert_eq!(detect(true, ToServer, &smb2, 12345), Ok(AppProto::Smb));
    assert_eq!(detect(true, ToServer, &smb2[..6], 12345), Err(Probe::NeedMore));
    let dce = [5, 0, 11, 3, 0x10, 0, 0, 0, 0x48, 0, 0, 0, 1, 0, 0, 0];
    assert_eq!(detect(true, ToServer, &dce, 49152), Ok(AppProto::Dcerpc));
    assert_eq!(
        detect(true, ToServer, &[5, 0, 11, 3, 0xff, 0, 0, 0, 0x48, 0, 0, 0, 1, 0, 0, 0], 49152),
        Err(Probe::NoMatch)
    );
    assert_eq!(
        detect(false, ToServer, b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe", 6881),
        Ok(AppProto::BittorrentDht)
    );
    assert_eq!(detect(false, ToServer, b"INVITE sip:bob@example.com SIP/2.0\r\n", 5080), Ok(AppProto::Sip));
    assert_eq!(detect(false, ToClient, b"SIP/2.0 200 OK\r\n", 5080), Ok(AppProto::Sip));
}

#[test]
fn probes_only_on_their_ports() {
    let mut ike = vec![0u8; 28];
    ike[..8].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    ike[17] = 0x10; // IKEv1
    ike[18] = 2; // identity protection
    assert_eq!(detect(false, ToServer, &ike, 500), Ok(AppProto::Ike));
    assert_eq!(detect(false, ToServer, &ike, 501), Err(Probe::NoMatch));
    // IKEv2 must have a known exchange and a length equal to the datagram's.
    ike[17] = 0x20;
    ike[18] = 34;
    ike[27] = 28;
    assert_eq!(detect(false, ToServer, &ike, 500), Ok(AppProto::Ike));
    ike[27] = 29;
    assert_eq!(detect(false, ToServer, &ike, 500), Err(Probe::NoMatch));
    assert_eq!(detect(true, ToServer, &[3, 0, 0, 0x13, 0x0e, 0xe0], 3389), Ok(AppProto::Rdp));
    assert_eq!(detect(true, ToServer, &[3, 0, 0, 0x13, 0x0e, 0xe0], 3390), Err(Probe::NoMatch));
    assert_eq!(detect(true, ToServer, &[0x10, 0x12, 0, 4, b'M', b'Q', b'T', b'T'], 1883), Ok(AppProto::Mqtt));
    assert_eq!(detect(true, ToServer, &[0x06, 0x12], 1883), Err(Probe::NoMatch), "QoS 3");
    let mut dhcp = vec![0u8; 300];
    dhcp[0] = 1;
    assert_eq!(detect(false, ToServer, &dhcp, 67), Ok(AppProto::Dhcp));
    assert_eq!(detect(false, ToServer, &dhcp[..200], 67), Err(Probe::NoMatch));
    let mut ntp = vec![0u8; 48];
    ntp[0] = 0x23; // v4, client
    assert_eq!(detect(false, ToServer, &ntp, 123), Ok(AppProto::Ntp));
    ntp[0] = 0x13; // v2
    assert_eq!(detect(false, ToServer, &ntp, 123), Err(Probe::NoMatch));
    assert_eq!(detect(false, ToServer, b"\x00\x01file\x00octet\x00", 69), Ok(AppProto::Tftp));
    assert_eq!(
        detect(false, ToServer, &[0xc3, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x44, 0xd0], 443),
        Ok(AppProto::Quic)
    );
}

#[test]
fn snmp_versions_and_ldap_messages() {
    // SNMPv2c get-request: SEQUENCE { INTEGER 1, OCTET STRING "public", [0] {...} }.
    let snmp = [0x30, 0x0f, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x02, 0x02, 0x00];
    assert_eq!(detect(false, ToServer, &snmp[..snmp.len() - 1], 161), Err(Probe::NeedMore), "truncated");
    let snmp = [0x30, 0x0d, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x00];
    assert_eq!(detect(false, ToServer, &snmp, 161), Ok(AppProto::Snmp));
    let mut v7 = snmp;
    v7[4] = 7;
    assert_eq!(detect(false, ToServer, &v7, 161), Err(Probe::NoMatch));
    // LDAP bind request: SEQUENCE { INTEGER 1, [APPLICATION 0] ... }.
    let bind = [0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];
    assert_eq!(detect(true, ToServer, &bind, 389), Ok(AppProto::Ldap));
    assert_eq!(detect(false, ToServer, &bind, 3268), Ok(AppProto::Ldap));
    assert_eq!(detect(true, ToServer, &bind[..4], 389), Err(Probe::NeedMore));
}

#[test]
fn default_off_protocols_follow_the_yaml() {
    let ssl_request = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    assert_eq!(detect(true, ToServer, &ssl_request, 5432), Err(Probe::NoMatch), "pgsql is off by default");
    let on = all_enabled();
    assert_eq!(on.detect(true, ToServer, &ssl_request, (50000, 5432)), Ok(AppProto::Pgsql));
    assert_eq!(on.detect(true, ToClient, b"S", (50000, 5432)), Ok(AppProto::Pgsql));
    // Startup message, protocol 3.0, then its parameters.
    let startup = b"\x00\x00\x00\x0f\x00\x03\x00\x00user\x00u\x00\x00";
    assert_eq!(on.detect(true, ToServer, startup, (50000, 5432)), Ok(AppProto::Pgsql));
    assert_eq!(on.detect(true, ToServer, &startup[..9], (50000, 5432)), Err(Probe::NeedMore));
    assert_eq!(on.detect(true, ToServer, b"\x00\x00\x00\x08\x00\x09\x00\x00", (50000, 5432)), Err(Probe::NoMatch));
    let dnp3 = [0x05, 0x64, 0x05, 0xc9, 0x01, 0x00, 0x00, 0x04, 0xe9, 0x21];
    assert_eq!(detect(true, ToServer, &dnp3, 20000), Err(Probe::NoMatch));
    assert_eq!(on.detect(true, ToServer, &dnp3, (50000, 20000)), Ok(AppProto::Dnp3));
    assert_eq!(on.detect(true, ToServer, &dnp3[..4], (50000, 20000)), Err(Probe::NeedMore));
    let mut enip = [0u8; 28];
    enip[0] = 0x65; // RegisterSession
    enip[2] = 4;
    assert_eq!(on.detect(false, ToServer, &enip, (50000, 44818)), Ok(AppProto::Enip));
    // sp: a flow from port 44818 counts as well.
    assert_eq!(on.detect(false, ToClient, &enip, (44818, 2222)), Ok(AppProto::Enip));
    enip[2] = 5;
    assert_eq!(on.detect(false, ToServer, &enip, (50000, 44818)), Err(Probe::NoMatch));
    let modbus = [0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 1];
    assert_eq!(on.detect(true, ToServer, &modbus, (50000, 502)), Ok(AppProto::Modbus));
}

#[test]
fn yaml_ports_and_disabling() {
    let mut s = DetectOnlySettings::default();
    s.apply(AppProto::Rdp, true, &ProtoOverride { dp: Some(vec![13389]), ..ProtoOverride::default() });
    assert_eq!(s.detect(true, ToServer, &[3, 0], (50000, 13389)), Ok(AppProto::Rdp));
    assert_eq!(s.detect(true, ToServer, &[3, 0], (50000, 3389)), Err(Probe::NoMatch));
    // A disabled pattern protocol is not detected anywhere, over that transport only.
    s.apply(AppProto::Rfb, true, &ProtoOverride { enabled: Some(false), ..ProtoOverride::default() });
    assert_eq!(s.detect(true, ToServer, b"RFB 003.008\n", (50000, 5900)), Err(Probe::NoMatch));
    s.apply(AppProto::Ldap, false, &ProtoOverride { enabled: Some(false), ..ProtoOverride::default() });
    let bind = [0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00];
    assert_eq!(s.detect(false, ToServer, &bind, (50000, 389)), Err(Probe::NoMatch));
    assert_eq!(s.detect(true, ToServer, &bind, (50000, 389)), Ok(AppProto::Ldap));
}

#[test]
fn udp_flows_get_app_state_only_where_something_may_match() {
    let s = DetectOnlySettings::default();
    assert!(s.udp_candidate(ToServer, (50000, 161), b"x"));
    assert!(s.udp_candidate(ToServer, (50000, 6881), b"d1:ad2:id20:abcdefghij0123456789e"));
    assert!(!s.udp_candidate(ToServer, (50000, 6881), b"hello"));
    assert!(!s.udp_candidate(ToServer, (50000, 44818), b"x"), "enip is off by default");
    let ports = DetectionPorts::default();
    assert!(ports.udp_candidate(ToServer, (50000, 53), b""));
}

#[test]
fn the_stream_probe_keeps_parsed_protocols_first() {
    // "RFB" on the HTTP port is still RFB; an HTTP request is still HTTP on the RFB port.
    let p = DetectionPorts::default();
    assert_eq!(
        probe_with(Transport::Tcp, ToServer, b"GET / HTTP/1.1\r\n", (50000, 5900), &p),
        ProbeResult::Detected(AppProto::Http)
    );
    assert_eq!(
        probe_with(Transport::Tcp, ToClient, b"RFB 003.008\n", (50000, 80), &p),
        ProbeResult::Detected(AppProto::Rfb)
    );
    // A datagram that matches nothing leaves its direction unknown.
    assert_eq!(probe_with(Transport::Udp, ToServer, b"zzz", (50000, 161), &p), ProbeResult::Unknown);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300), sp in any::<u16>(), dp in any::<u16>()) {
        let s = all_enabled();
        for dir in [ToServer, ToClient] {
            for tcp in [true, false] {
                let _ = s.detect(tcp, dir, &data, (sp, dp));
            }
            let _ = s.udp_candidate(dir, (sp, dp), &data);
        }
        // Every probe on its own, whatever the ports.
        for e in &TABLE {
            for d in [e.tcp.as_ref(), e.udp.as_ref()].into_iter().flatten() {
                for f in [d.pattern, d.probe].into_iter().flatten() {
                    let _ = f(ToServer, &data);
                    let _ = f(ToClient, &data);
                }
            }
        }
    }
}

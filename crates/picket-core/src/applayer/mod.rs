//! Application-layer parsers, sans-IO: fed reassembled stream bytes (or datagrams) per
//! direction, they produce transactions whose fields fill Suricata's sticky buffers.
//! Not yet wired into the worker: that is the HTTP/DNS/TLS inspection work.

pub mod dns;
pub mod http;
pub mod layer;
pub mod probe;
pub mod tls;

//! The end of HTTP/1 on a connection upgraded to HTTP/2 in clear text (`Upgrade: h2c`
//! answered by `101 Switching Protocols`, RFC 7540 section 3.2): what the HTTP/2 parser
//! taking over needs from the HTTP/1 one.

use super::{HttpParser, HttpTx, State};
use crate::stream::Direction;

/// What an HTTP/1 parser hands over when its connection switched to HTTP/2.
pub struct H2cUpgrade {
    /// The HTTP/1 transactions still held (the upgrade's among them): they stay
    /// transactions of the flow until inspected and reported.
    pub txs: Vec<HttpTx>,
    /// The id the next transaction of the flow takes.
    pub next_tx_id: u64,
    /// The upgrade request (HTTP/2's stream 1 is its request).
    pub request: HttpTx,
    /// The request's `HTTP2-Settings` header (base64url SETTINGS payload).
    pub settings: Option<Vec<u8>>,
    /// Bytes of each direction after the HTTP/1 messages (the HTTP/2 preface and frames).
    pub rest: [Vec<u8>; 2],
}

fn says_h2c(value: Option<&[u8]>) -> bool {
    value.is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"h2c"))
}

impl HttpParser {
    /// The connection switched to HTTP/2: the 101 response of a request with `Upgrade:
    /// h2c` says `Upgrade: h2c` too. Hands over (once) what HTTP/2 needs; `None` otherwise.
    pub fn take_h2c_upgrade(&mut self) -> Option<H2cUpgrade> {
        if self.halves[1].state != State::Tunnel {
            return None;
        }
        let tx = self.txs.iter().rev().find(|t| t.status_code == Some(101))?;
        if !says_h2c(tx.response_header("upgrade")) || !says_h2c(tx.request_header("upgrade")) {
            return None;
        }
        let request = tx.clone();
        let settings = tx.request_header("http2-settings").map(<[u8]>::to_vec);
        let rest = [Direction::ToServer, Direction::ToClient].map(|d| {
            let h = &mut self.halves[d.index()];
            let rest = std::mem::take(&mut h.tunnel_rest);
            h.buf.get(h.pos..).map_or(rest.clone(), |b| [rest.as_slice(), b].concat())
        });
        for h in &mut self.halves {
            h.state = State::Lost;
            h.discard();
        }
        for tx in &self.txs {
            self.body_mem.release(tx);
        }
        Some(H2cUpgrade { txs: self.txs.drain(..).collect(), next_tx_id: self.next_tx_id, request, settings, rest })
    }
}

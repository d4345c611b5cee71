//! SSH as the detection engine sees it: the session is one transaction (id 0); `ssh.proto`
//! and `ssh.software` are the banner of the side sending in the packet's direction, the
//! client's HASSH is inspected to the server, the server's to the client.

use super::SshState;
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::Buffer;
use crate::stream::Direction;

/// The only transaction id an SSH flow has.
pub(crate) const SSH_TX_ID: u64 = 0;

pub(crate) struct SshBuffers<'a> {
    state: &'a SshState,
    dir: Direction,
}

impl<'a> SshBuffers<'a> {
    pub(crate) fn new(state: &'a SshState, dir: Direction) -> Self {
        SshBuffers { state, dir }
    }
}

impl BufferSource for SshBuffers<'_> {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        let side = self.state.side(self.dir);
        let to_server = self.dir == Direction::ToServer;
        let b: &[u8] = match buffer.name {
            "ssh.proto" => &side.proto_version,
            "ssh.software" => &side.software_version,
            "ssh.hassh" if to_server => side.hassh.as_bytes(),
            "ssh.hassh.string" if to_server => &side.hassh_string,
            "ssh.hassh.server" if !to_server => side.hassh.as_bytes(),
            "ssh.hassh.server.string" if !to_server => &side.hassh_string,
            _ => return None,
        };
        (!b.is_empty()).then_some(b)
    }
}

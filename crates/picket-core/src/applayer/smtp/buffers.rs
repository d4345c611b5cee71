//! SMTP as the detection engine sees it, to the server: `smtp.helo` (the session's),
//! `smtp.mail_from`, `smtp.rcpt_to` (one instance per recipient) and `file.name` (one
//! instance per attachment) and `file.data` (the start of each attachment's decoded
//! content, up to `content-limit`) of the mail.

use super::record::SmtpView;
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::Buffer;
use crate::stream::Direction;

pub(crate) struct SmtpBuffers<'a> {
    view: SmtpView<'a>,
    dir: Direction,
}

impl<'a> SmtpBuffers<'a> {
    pub(crate) fn new(view: SmtpView<'a>, dir: Direction) -> Self {
        SmtpBuffers { view, dir }
    }
}

impl BufferSource for SmtpBuffers<'_> {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        self.get_nth(buffer, 0)
    }

    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        if self.dir != Direction::ToServer {
            return None;
        }
        let tx = self.view.tx;
        let b: &[u8] = match (buffer.name, index) {
            ("smtp.helo", 0) => self.view.helo?,
            ("smtp.mail_from", 0) => tx.mail_from.as_deref()?,
            ("smtp.rcpt_to", i) => tx.rcpt_to.get(i)?,
            ("file.name", i) => &tx.files().get(i)?.name,
            ("file.data", i) => tx.mime.as_ref()?.file_data.get(i)?,
            _ => return None,
        };
        (!b.is_empty()).then_some(b)
    }
}

//! [`SseDecoder`]: the `data` of server-sent events, from bytes as they
//! arrive, each byte looked at once.

use std::collections::VecDeque;

use crate::error::ResponseError;

/// Splits a server-sent event stream into lines and lines into events, and
/// queues the data of each finished event (its `data` lines joined by
/// `\n`).
///
/// Each byte pushed is searched for a line end once: a line cut across
/// reads waits in a buffer that is only appended to, never searched again,
/// so a 16 MB line arriving in 4 KB reads costs as much as one arriving
/// whole. Lines end at `\n` (a `\r` before it is dropped); `event`, `id`
/// and `retry` fields and comments (lines starting with `:`) are skipped.
/// A line longer than its limit, or an event whose data grows larger than
/// its limit, is an error as soon as the bytes that break it arrive, so
/// the buffers never hold more than the limits (plus one read).
#[derive(Debug)]
pub struct SseDecoder {
    // Invariant: holds no `\n`; it is the start of the line whose end has
    // not arrived yet.
    partial: Vec<u8>,
    // The data of the event being read; meaningful only when `has_data`.
    data: Vec<u8>,
    // Whether the event being read had a `data` line (an empty one counts).
    has_data: bool,
    ready: VecDeque<Vec<u8>>,
    max_line: usize,
    max_event: usize,
}

impl SseDecoder {
    /// A decoder refusing lines longer than `max_line_bytes` (not counting
    /// the `\n`) and events whose data is larger than `max_event_bytes`.
    pub fn new(max_line_bytes: usize, max_event_bytes: usize) -> Self {
        Self {
            partial: Vec::new(),
            data: Vec::new(),
            has_data: false,
            ready: VecDeque::new(),
            max_line: max_line_bytes,
            max_event: max_event_bytes,
        }
    }

    /// Reads the next bytes of the stream, queueing the events they finish.
    ///
    /// # Errors
    /// [`ResponseError::LineTooLong`] and [`ResponseError::EventTooLarge`];
    /// after one, the decoder's state is unspecified and the stream should
    /// be dropped.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
            let (head, tail) = (&rest[..end], &rest[end + 1..]);
            if self.partial.is_empty() {
                self.check_line(head.len())?;
                self.line(head)?;
            } else {
                self.check_line(self.partial.len() + head.len())?;
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                self.line(&line)?;
                // Keeps the allocation for the next cut line.
                line.clear();
                self.partial = line;
            }
            rest = tail;
        }
        self.check_line(self.partial.len() + rest.len())?;
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the stream: reads a last line that has no `\n` and queues the
    /// event it or the lines before it started, as if a blank line had
    /// followed (a lenient reading of servers that close without one).
    ///
    /// # Errors
    /// As [`push`](Self::push).
    pub fn finish(&mut self) -> Result<(), ResponseError> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line)?;
        }
        self.line(b"")
    }

    /// The data of the next finished event, oldest first.
    pub fn next_event(&mut self) -> Option<Vec<u8>> {
        self.ready.pop_front()
    }

    fn check_line(&self, len: usize) -> Result<(), ResponseError> {
        if len > self.max_line {
            return Err(ResponseError::LineTooLong {
                limit: self.max_line,
            });
        }
        Ok(())
    }

    /// Reads one line (without its `\n`).
    fn line(&mut self, line: &[u8]) -> Result<(), ResponseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if self.has_data {
                self.ready.push_back(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return Ok(());
        }
        let (field, value) = match line.iter().position(|byte| *byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        // A comment has an empty field name; other fields carry nothing
        // the client uses.
        if field != b"data" {
            return Ok(());
        }
        let separator = usize::from(self.has_data);
        if self.data.len() + separator + value.len() > self.max_event {
            return Err(ResponseError::EventTooLarge {
                limit: self.max_event,
            });
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(decoder: &mut SseDecoder) -> Vec<String> {
        std::iter::from_fn(|| decoder.next_event())
            .map(|data| String::from_utf8(data).unwrap())
            .collect()
    }

    #[test]
    fn events_are_their_data_lines_joined() {
        let mut decoder = SseDecoder::new(100, 100);
        decoder
            .push(b": comment\nevent: x\nid: 1\ndata: a\ndata:b\r\ndata\n\ndata: c\n")
            .unwrap();
        assert_eq!(events(&mut decoder), ["a\nb\n"]);
        decoder.push(b"\n\n\nretry: 5\n\n").unwrap();
        assert_eq!(events(&mut decoder), ["c"]);
    }

    #[test]
    fn lines_cut_anywhere_read_the_same() {
        let text = b"data: {\"a\": 1}\r\n\r\ndata: [DONE]\n\n";
        for size in 1..text.len() {
            let mut decoder = SseDecoder::new(100, 100);
            for piece in text.chunks(size) {
                decoder.push(piece).unwrap();
            }
            assert_eq!(events(&mut decoder), ["{\"a\": 1}", "[DONE]"], "{size}");
        }
    }

    #[test]
    fn a_16_mib_line_in_4_kib_pieces_is_one_event() {
        let mut text = b"data: ".to_vec();
        text.resize(16 << 20, b'x');
        text.extend_from_slice(b"\n\n");
        let mut decoder = SseDecoder::new(16 << 20, 16 << 20);
        for piece in text.chunks(4096) {
            decoder.push(piece).unwrap();
        }
        let event = decoder.next_event().unwrap();
        assert_eq!(event.len(), (16 << 20) - 6);
        assert!(event.iter().all(|b| *b == b'x'));
        assert_eq!(decoder.next_event(), None);
    }

    #[test]
    fn lines_may_reach_the_limit_but_not_pass_it() {
        let mut decoder = SseDecoder::new(10, 100);
        decoder.push(b"data: 1234\ndata: 123").unwrap();
        decoder.push(b"4\n\n").unwrap();
        assert_eq!(events(&mut decoder), ["1234\n1234"]);
        // Over the limit before the line ends: refused at once.
        let err = decoder.push(b"data: 12345").unwrap_err();
        assert_eq!(err, ResponseError::LineTooLong { limit: 10 });
        let mut decoder = SseDecoder::new(10, 100);
        decoder.push(b"data: 12").unwrap();
        let err = decoder.push(b"345\n").unwrap_err();
        assert_eq!(err, ResponseError::LineTooLong { limit: 10 });
        // The `\r` of a `\r\n` counts.
        let err = SseDecoder::new(10, 100)
            .push(b"data: 1234\r\n")
            .unwrap_err();
        assert_eq!(err, ResponseError::LineTooLong { limit: 10 });
    }

    #[test]
    fn events_may_reach_the_limit_but_not_pass_it() {
        let mut decoder = SseDecoder::new(100, 9);
        decoder.push(b"data: 1234\ndata: 1234\n\n").unwrap();
        assert_eq!(events(&mut decoder), ["1234\n1234"]);
        let err = decoder.push(b"data: 1234\ndata: 12345\n\n").unwrap_err();
        assert_eq!(err, ResponseError::EventTooLarge { limit: 9 });
    }

    #[test]
    fn finishing_reads_what_no_blank_line_closed() {
        let mut decoder = SseDecoder::new(100, 100);
        decoder.push(b"data: a\n\ndata: [DONE]").unwrap();
        assert_eq!(events(&mut decoder), ["a"]);
        decoder.finish().unwrap();
        assert_eq!(events(&mut decoder), ["[DONE]"]);
        let mut decoder = SseDecoder::new(100, 100);
        decoder.push(b"data: b\n").unwrap();
        decoder.finish().unwrap();
        assert_eq!(events(&mut decoder), ["b"]);
        decoder.finish().unwrap();
        assert_eq!(decoder.next_event(), None);
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let mut decoder = SseDecoder::new(100, 100);
        decoder.push(b"data: \xff\xfe\n\n").unwrap();
        assert_eq!(decoder.next_event().unwrap(), b"\xff\xfe");
    }
}

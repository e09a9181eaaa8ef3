//! Server-Sent Events parsing: bytes off the wire in, each event's `data` out.
//!
//! Follows the WHATWG EventSource "interpreting an event stream" rules: lines end with CRLF,
//! LF or CR; a line starting with `:` is a comment; `field:value` loses one leading space of
//! its value; `data` lines accumulate, joined with `\n`; `event`, `id`, `retry` and unknown
//! fields are accepted and ignored (nothing in provebench needs them); a blank line dispatches
//! the event, unless it had no `data` line; a UTF-8 BOM at the very start is skipped; at end of
//! stream an event not closed by a blank line is discarded.
//!
//! This is on the per-token hot path (the product's budget is ≤ 2 µs of client CPU per streamed
//! token, JSON included), so:
//! * line ends are found eight bytes at a time (SWAR), not byte by byte;
//! * an event whose lines all arrive in one chunk — the usual case, since servers write each
//!   event in one go — is handed to the callback as a slice of that chunk: no copy at all;
//! * otherwise bytes go into two buffers owned by the parser (the unfinished line, the event's
//!   data so far) that keep their capacity: after warm-up nothing is allocated per event.
//!
//! Memory is bounded by `max_event_bytes`: an event (its lines since the last blank line,
//! comments and field names included, terminators excluded) that grows past it is an error, so a
//! server that never ends a line cannot make the client buffer without limit.

use thiserror::Error;

/// Why a stream cannot be parsed further.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SseError {
    /// One event grew past the parser's limit (bytes of its lines since the last blank line).
    #[error("server-sent event larger than {limit} bytes")]
    EventTooLarge {
        /// The limit given to [`SseParser::new`].
        limit: usize,
    },
}

/// What [`SseParser::finish`] found at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Leftover {
    /// Bytes received after the last blank line (an unfinished event or line; 0 for a stream that
    /// ended cleanly on an event boundary). Line terminators are not counted.
    pub bytes: usize,
    /// Whether those bytes held `data` that was never dispatched (a truncated event).
    pub undispatched_data: bool,
}

impl Leftover {
    /// The stream ended exactly on an event boundary.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn is_clean(&self) -> bool {
        self.bytes == 0
    }
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// An incremental event-stream parser: feed it chunks as they arrive, split anywhere.
///
/// One parser serves one stream at a time; [`finish`](Self::finish) readies it for the next
/// while keeping its buffers.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// The unfinished line carried over from previous chunks.
    line: Vec<u8>,
    /// The current event's data (lines joined with '\n') when it could not be borrowed.
    data: Vec<u8>,
    /// The current event has at least one `data` line (so it will be dispatched, even if empty).
    has_data: bool,
    /// Bytes of the current event's completed lines.
    event_bytes: usize,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    /// How many bytes of the BOM have been matched at the start of the stream; 3 = done.
    bom_seen: u8,
    /// Set once an error was returned: the stream's framing can no longer be trusted.
    failed: Option<SseError>,
}

/// Where the current event's data lives while a chunk is being parsed.
#[derive(Clone, Copy)]
enum Pending {
    /// In `SseParser::data` (or nowhere, if the event has no data yet).
    Owned,
    /// Exactly `chunk[start..end]`: one data line, inside the chunk being parsed.
    Borrowed(usize, usize),
}

impl SseParser {
    /// A parser that refuses any event larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event_bytes: 0,
            after_cr: false,
            bom_seen: 0,
            failed: None,
        }
    }

    /// Feeds bytes; calls `on_data(data)` for every complete event that has data (its `data`
    /// lines joined with `\n`). After an error every later call returns the same error.
    pub fn push(&mut self, chunk: &[u8], mut on_data: impl FnMut(&[u8])) -> Result<(), SseError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut chunk = chunk;
        if self.bom_seen < 3 {
            chunk = self.skip_bom(chunk);
        }
        if self.after_cr && !chunk.is_empty() {
            // A CRLF split between two chunks: the CR already ended the line.
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        let result = self.parse(chunk, &mut on_data);
        if let Err(e) = result {
            self.failed = Some(e);
        }
        result
    }

    /// Ends the stream: the unfinished event, if any, is discarded (as the spec requires) and
    /// reported; the parser is reset for a new stream, keeping its buffers' capacity.
    pub fn finish(&mut self) -> Leftover {
        let leftover = Leftover {
            bytes: self.event_bytes + self.line.len(),
            // An unfinished last line may itself be a data line.
            undispatched_data: self.has_data || (!self.line.is_empty() && is_data_line(&self.line)),
        };
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.event_bytes = 0;
        self.after_cr = false;
        self.bom_seen = 0;
        self.failed = None;
        leftover
    }

    /// Consumes a (possibly partial) BOM at the start of the stream.
    fn skip_bom<'c>(&mut self, mut chunk: &'c [u8]) -> &'c [u8] {
        while self.bom_seen < 3 {
            let Some(&b) = chunk.first() else {
                return chunk;
            };
            if b == BOM[self.bom_seen as usize] {
                self.bom_seen += 1;
                chunk = &chunk[1..];
            } else {
                // Not a BOM after all: the bytes matched so far are ordinary line content (none of
                // them is a line terminator), so they start the first line.
                self.line.extend_from_slice(&BOM[..self.bom_seen as usize]);
                self.bom_seen = 3;
            }
        }
        chunk
    }

    fn parse(&mut self, chunk: &[u8], on_data: &mut impl FnMut(&[u8])) -> Result<(), SseError> {
        let mut pending = Pending::Owned;
        let mut pos = 0;
        while pos < chunk.len() {
            let Some(offset) = find_eol(&chunk[pos..]) else {
                // An unfinished line: keep it for the next chunk.
                let rest = &chunk[pos..];
                if self.event_bytes + self.line.len() + rest.len() > self.max_event_bytes {
                    return Err(self.too_large());
                }
                self.line.extend_from_slice(rest);
                break;
            };
            let end = pos + offset;
            let next = if chunk[end] == b'\r' {
                match chunk.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => {
                        self.after_cr = true;
                        end + 1
                    }
                }
            } else {
                end + 1
            };
            if self.line.is_empty() {
                // The fast path: the line lies whole in this chunk, and may be lent from it.
                self.line(&chunk[pos..end], Some(end), chunk, &mut pending, on_data)?;
            } else {
                // The line began in an earlier chunk: complete it in the carry-over buffer.
                self.line.extend_from_slice(&chunk[pos..end]);
                let line = std::mem::take(&mut self.line);
                let r = self.line(&line, None, chunk, &mut pending, on_data);
                self.line = line;
                self.line.clear();
                r?;
            }
            pos = next;
        }
        // The chunk goes away: an event still open must own its data.
        if let Pending::Borrowed(s, e) = pending {
            self.data.extend_from_slice(&chunk[s..e]);
        }
        Ok(())
    }

    /// One line: a blank one dispatches the event, a `data` one adds to it. `in_chunk`: where
    /// the line ends in `chunk` when it lies there whole, so that an event's only data line
    /// can be lent from the chunk instead of copied. Inlined into both callers, where
    /// `in_chunk` is known: measured 10 % slower per event as one shared call.
    #[inline(always)]
    fn line(
        &mut self,
        line: &[u8],
        in_chunk: Option<usize>,
        chunk: &[u8],
        pending: &mut Pending,
        on_data: &mut impl FnMut(&[u8]),
    ) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(chunk, pending, on_data);
            return Ok(());
        }
        self.count(line.len())?;
        if let Some(value) = data_value(line) {
            if self.has_data {
                self.append_data(chunk, pending, value);
            } else {
                self.has_data = true;
                match in_chunk {
                    Some(end) => *pending = Pending::Borrowed(end - value.len(), end),
                    None => self.data.extend_from_slice(value),
                }
            }
        }
        Ok(())
    }

    /// A second or later data line: the data must now be owned.
    fn append_data(&mut self, chunk: &[u8], pending: &mut Pending, value: &[u8]) {
        if let Pending::Borrowed(s, e) = *pending {
            self.data.extend_from_slice(&chunk[s..e]);
            *pending = Pending::Owned;
        }
        self.data.push(b'\n');
        self.data.extend_from_slice(value);
    }

    /// A blank line: hand over the event's data, if it had any, and start a new event.
    fn dispatch(&mut self, chunk: &[u8], pending: &mut Pending, on_data: &mut impl FnMut(&[u8])) {
        if self.has_data {
            match *pending {
                Pending::Borrowed(s, e) => on_data(&chunk[s..e]),
                Pending::Owned => on_data(&self.data),
            }
        }
        *pending = Pending::Owned;
        self.data.clear();
        self.has_data = false;
        self.event_bytes = 0;
    }

    fn count(&mut self, line_len: usize) -> Result<(), SseError> {
        self.event_bytes += line_len;
        if self.event_bytes > self.max_event_bytes {
            return Err(self.too_large());
        }
        Ok(())
    }

    fn too_large(&self) -> SseError {
        SseError::EventTooLarge {
            limit: self.max_event_bytes,
        }
    }
}

/// The value of a `data` line (one leading space stripped), or None for any other line.
#[inline]
fn data_value(line: &[u8]) -> Option<&[u8]> {
    // The overwhelmingly common shape first.
    if let Some(v) = line.strip_prefix(b"data:") {
        return Some(v.strip_prefix(b" ").unwrap_or(v));
    }
    if line == b"data" {
        // A field name with no colon: the whole line is the name, the value is empty.
        return Some(&[]);
    }
    // Comments (`:…`), other fields (`event`, `id`, `retry`, unknown ones): ignored.
    None
}

fn is_data_line(line: &[u8]) -> bool {
    data_value(line).is_some()
}

/// The index of the first CR or LF in `s`, eight bytes at a time.
#[inline]
fn find_eol(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const LF: u64 = ONES * b'\n' as u64;
    const CR: u64 = ONES * b'\r' as u64;
    let mut i = 0;
    while i + 8 <= s.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&s[i..i + 8]);
        let w = u64::from_le_bytes(word);
        let (a, b) = (w ^ LF, w ^ CR);
        // A byte of `a` (or `b`) is zero where `w` holds LF (CR). The classic zero-byte test can
        // flag bytes above a true zero, never below one, so the lowest flag is exact.
        let zero = (a.wrapping_sub(ONES) & !a | b.wrapping_sub(ONES) & !b) & HIGHS;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map(|p| i + p)
}

/// Test support: the `data` of every event dispatched from `chunks` fed in order (no limit
/// on an event's size), and what was left when the stream ended.
#[cfg(test)]
pub(crate) fn data_events<C: AsRef<[u8]>>(chunks: &[C]) -> (Vec<Vec<u8>>, Leftover) {
    let mut p = SseParser::new(1 << 20);
    let mut out = Vec::new();
    for c in chunks {
        p.push(c.as_ref(), |d| out.push(d.to_vec())).unwrap();
    }
    let left = p.finish();
    (out, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dispatched event of `chunks` fed in order, as text, and the leftover.
    fn events_of(chunks: &[&[u8]]) -> (Vec<String>, Leftover) {
        let (events, left) = data_events(chunks);
        let text = events.into_iter().map(|d| String::from_utf8(d).unwrap());
        (text.collect(), left)
    }

    fn events(stream: &[u8]) -> Vec<String> {
        events_of(&[stream]).0
    }

    #[test]
    fn find_eol_matches_a_naive_scan() {
        let mut s = vec![b'a'; 40];
        assert_eq!(find_eol(&s), None);
        for i in 0..40 {
            for t in [b'\n', b'\r'] {
                s[i] = t;
                assert_eq!(find_eol(&s), Some(i));
                // A later terminator and high bytes around never hide the first.
                s[39] = b'\n';
                if i + 1 < 39 {
                    s[i + 1] = 0x8A;
                }
                assert_eq!(find_eol(&s), Some(i), "at {i}");
                s.fill(b'a');
            }
        }
        for b in 0..=255u8 {
            let s = [b; 9];
            let want = (b == b'\n' || b == b'\r').then_some(0);
            assert_eq!(find_eol(&s), want, "byte {b}");
        }
    }

    #[test]
    fn lf_crlf_and_cr_only_give_the_same_events() {
        let lf = b"data: a\n\ndata: b\ndata: c\n\n";
        let crlf = b"data: a\r\n\r\ndata: b\r\ndata: c\r\n\r\n";
        let cr = b"data: a\r\rdata: b\rdata: c\r\r";
        for s in [&lf[..], &crlf[..], &cr[..]] {
            assert_eq!(events(s), ["a", "b\nc"]);
        }
        // Mixed terminators in one stream.
        assert_eq!(events(b"data: a\r\n\ndata: b\r\r\n"), ["a", "b"]);
    }

    #[test]
    fn field_syntax() {
        assert_eq!(events(b"data:x\n\n"), ["x"], "no space after the colon");
        assert_eq!(
            events(b"data:  x \n\n"),
            [" x "],
            "only one space is stripped"
        );
        assert_eq!(
            events(b"data\n\n"),
            [""],
            "a bare field name is an empty value"
        );
        assert_eq!(
            events(b"data:\n\n"),
            [""],
            "an empty data line still dispatches"
        );
        assert_eq!(events(b"data\ndata\n\n"), ["\n"]);
        assert_eq!(
            events(b"data: a:b: c\n\n"),
            ["a:b: c"],
            "only the first colon splits"
        );
        assert!(
            events(b"Data: x\n\n").is_empty(),
            "field names are case-sensitive"
        );
        assert!(events(b"datax: y\n\n").is_empty());
        assert!(
            events(b"event: ping\nid: 7\nretry: 100\n\n").is_empty(),
            "no data, no event"
        );
        assert_eq!(
            events(b"event: message\nid: 1\nretry: 3000\nfoo: bar\ndata: x\nid\n\n"),
            ["x"],
            "other fields are accepted and ignored"
        );
    }

    #[test]
    fn comments_and_keep_alives() {
        let s =
            b": hello\n\ndata: a\n: inside an event\ndata: b\n\n: keep-alive\n\n:\n\ndata: c\n\n";
        assert_eq!(events(s), ["a\nb", "c"]);
        assert_eq!(events(b":data: no\n\n"), Vec::<String>::new());
    }

    #[test]
    fn bom_is_skipped_only_at_the_start() {
        assert_eq!(events(b"\xEF\xBB\xBFdata: a\n\n"), ["a"]);
        // Split across chunks.
        let (ev, _) = events_of(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]);
        assert_eq!(ev, ["a"]);
        // A BOM later on is content (and makes the line no `data` line).
        assert!(events(b"\n\xEF\xBB\xBFdata: a\n\n").is_empty());
        // A partial BOM is kept as content.
        let (ev, left) = events_of(&[b"\xEF\xBB", b"x\n\ndata: y\n\n"]);
        assert_eq!(ev, ["y"]);
        assert!(left.is_clean());
    }

    #[test]
    fn unterminated_last_event_is_not_dispatched() {
        let (ev, left) = events_of(&[b"data: a\n\ndata: b\n"]);
        assert_eq!(ev, ["a"]);
        assert_eq!(
            left,
            Leftover {
                bytes: 7,
                undispatched_data: true
            }
        );
        let (ev, left) = events_of(&[b"data: a\n\ndata: b"]);
        assert_eq!(ev, ["a"]);
        assert_eq!(
            left,
            Leftover {
                bytes: 7,
                undispatched_data: true
            }
        );
        let (_, left) = events_of(&[b"data: a\n\n: bye"]);
        assert_eq!(
            left,
            Leftover {
                bytes: 5,
                undispatched_data: false
            }
        );
        let (_, left) = events_of(&[b"data: a\n\n"]);
        assert!(left.is_clean());
        // CRLF ending split after CR: still clean.
        let (ev, left) = events_of(&[b"data: a\r\n\r", b"\n"]);
        assert_eq!(ev, ["a"]);
        assert!(left.is_clean());
    }

    /// A stream with every feature, fed split at every byte position (and byte by byte), must
    /// give the same events as when fed whole.
    #[test]
    fn every_split_gives_the_same_events() {
        let streams: [&[u8]; 4] = [
            b"\xEF\xBB\xBF: open\r\n\r\ndata: {\"a\":1}\r\n\r\ndata:x\r\ndata: y\r\n\r\n: ka\r\n\r\nevent: e\r\nid: 1\r\ndata\r\n\r\ndata: [DONE]\r\n\r\n",
            b"data: one\r\rdata: two\rdata: three\r\r:c\r\rdata: [DONE]\r\r",
            b"data: one\n\ndata: two\ndata: three\n\n:c\n\nretry: 10\ndata: [DONE]\n\n",
            b"data: a\r\n\ndata: b\r\r\ndata: c\n\r\n",
        ];
        for stream in streams {
            let whole = events(stream);
            assert!(whole.len() >= 3, "{whole:?}");
            for cut in 0..=stream.len() {
                let (ev, left) = events_of(&[&stream[..cut], &stream[cut..]]);
                assert_eq!(ev, whole, "cut at {cut}");
                assert!(left.is_clean(), "cut at {cut}: {left:?}");
            }
            for a in 0..=stream.len() {
                for b in a..=stream.len() {
                    let (ev, _) = events_of(&[&stream[..a], &stream[a..b], &stream[b..]]);
                    assert_eq!(ev, whole, "cuts at {a}, {b}");
                }
            }
            let bytes: Vec<&[u8]> = stream.chunks(1).collect();
            assert_eq!(events_of(&bytes).0, whole, "byte by byte");
        }
    }

    #[test]
    fn events_over_the_limit_are_errors() {
        let mut p = SseParser::new(16);
        let mut n = 0;
        p.push(b"data: 0123456789\n\n", |_| n += 1).unwrap(); // 16 bytes: at the limit
        assert_eq!(n, 1);
        let e = p.push(b"data: 0123456789A\n\n", |_| n += 1).unwrap_err();
        assert_eq!(e, SseError::EventTooLarge { limit: 16 });
        assert_eq!(
            p.push(b"data: x\n\n", |_| n += 1),
            Err(e),
            "a failed stream stays failed"
        );
        assert_eq!(n, 1);
        p.finish();
        p.push(b"data: x\n\n", |_| n += 1).unwrap();
        assert_eq!(n, 2, "finish() readies the parser for a new stream");

        // Counted over all of an event's lines, and for an unterminated line as it grows.
        let mut p = SseParser::new(16);
        assert!(p.push(b"data: 01234\ndata: 56789\n\n", |_| {}).is_err());
        let mut p = SseParser::new(16);
        p.push(b"data: 0123", |_| {}).unwrap();
        assert!(p.push(b"456789ABCDEF", |_| {}).is_err());
        let mut p = SseParser::new(16);
        assert!(p.push(&[b'x'; 17], |_| {}).is_err());
        // Blank lines reset the count: many small events are fine.
        let mut p = SseParser::new(16);
        for _ in 0..100 {
            p.push(b": keep-alive\n\ndata: 0123456789\n\n", |_| {})
                .unwrap();
        }
    }

    /// The spec's algorithm, written as plainly as possible: whole stream in, events out.
    fn reference(stream: &[u8]) -> (Vec<String>, bool) {
        let s = stream.strip_prefix(&BOM[..]).unwrap_or(stream);
        let (mut events, mut data, mut has_data, mut line) =
            (vec![], Vec::new(), false, Vec::new());
        let mut i = 0;
        let mut ended_cleanly = true;
        while i < s.len() {
            let c = s[i];
            i += 1;
            if c != b'\r' && c != b'\n' {
                line.push(c);
                ended_cleanly = false;
                continue;
            }
            if c == b'\r' && s.get(i) == Some(&b'\n') {
                i += 1;
            }
            if line.is_empty() {
                if has_data {
                    events.push(String::from_utf8_lossy(&data).into_owned());
                }
                data.clear();
                has_data = false;
                ended_cleanly = true;
            } else {
                let (field, value) = match line.iter().position(|&b| b == b':') {
                    Some(0) => (&b""[..], &b""[..]),
                    Some(p) => {
                        let v = &line[p + 1..];
                        (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
                    }
                    None => (&line[..], &b""[..]),
                };
                if field == b"data" {
                    if has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value);
                    has_data = true;
                }
                line.clear();
            }
        }
        (events, ended_cleanly)
    }

    /// Random streams over a small alphabet of meaningful pieces, fed in random chunks, agree
    /// with the reference.
    #[test]
    fn agrees_with_a_reference_on_random_streams() {
        const PIECES: [&[u8]; 14] = [
            b"data",
            b"data:",
            b"data: ",
            b":",
            b" ",
            b"x",
            b"\r",
            b"\n",
            b"\r\n",
            b"event: e",
            b"id",
            b"\xEF\xBB\xBF",
            b"{\"a\":1}",
            b"retry:5",
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..20_000 {
            let mut stream = Vec::new();
            for _ in 0..rand(24) {
                stream.extend_from_slice(PIECES[rand(PIECES.len())]);
            }
            let (want, clean) = reference(&stream);
            let mut chunks = Vec::new();
            let mut rest = &stream[..];
            while !rest.is_empty() {
                let (a, b) = rest.split_at(1 + rand(rest.len().min(12)));
                chunks.push(a);
                rest = b;
            }
            let (got, left) = events_of(&chunks);
            assert_eq!(got, want, "stream {:?}", String::from_utf8_lossy(&stream));
            if clean {
                assert!(
                    left.is_clean(),
                    "stream {:?}: {left:?}",
                    String::from_utf8_lossy(&stream)
                );
            } else {
                assert!(
                    left.bytes > 0,
                    "stream {:?}",
                    String::from_utf8_lossy(&stream)
                );
            }
        }
    }

    #[test]
    fn borrowed_and_owned_paths_agree_on_multiline_data() {
        // A multi-line event that starts in one chunk and ends in another.
        let (ev, _) = events_of(&[b"data: a\ndata: b", b"\ndata: c\n", b"\n"]);
        assert_eq!(ev, ["a\nb\nc"]);
        let (ev, _) = events_of(&[b"data: a\n", b"data: b\n\n"]);
        assert_eq!(ev, ["a\nb"]);
        let (ev, _) = events_of(&[b"data: a\n", b"\n"]);
        assert_eq!(ev, ["a"]);
    }
}

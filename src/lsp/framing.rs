//! The server's own `Content-Length` framing on stdio, in place of lsp-server's reader
//! thread (which ended the server on the first bad frame and allocated whatever length a
//! client claimed).
//!
//! Input: the client's byte stream. Output: one [`Frame`] at a time: a message, or why a frame
//! was not one (answered with a JSON-RPC error, `id: null`, and the stream goes on).
//! Invariants: no frame allocates more than [`MAX_MESSAGE`] (the body is read as it arrives,
//! never sized from the header); a header line keeps at most [`MAX_HEADER_LINE`] bytes (its
//! tail, where the next `Content-Length` of a resynchronising stream is); after a bad header
//! the reader resynchronises on the next `Content-Length:` it sees.

use std::io::{self, BufRead, Read, Write};

use lsp_server::Message;
use serde_json::{json, Value};

/// The largest message body accepted: a 50 MB document opened whole fits, a hostile
/// `Content-Length: 1000000000000` does not.
pub const MAX_MESSAGE: u64 = 64 << 20;
/// The most of one header line kept.
pub const MAX_HEADER_LINE: usize = 8 << 10;

/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC: the body is JSON but not a request, response or notification.
pub const INVALID_REQUEST: i32 = -32600;

/// One frame read from the client.
#[derive(Debug)]
pub enum Frame {
    Message(Message),
    /// Not a message: answered with this JSON-RPC error and skipped.
    Invalid {
        code: i32,
        message: String,
        /// The request's id when the body had a usable one, else `null`.
        id: Value,
    },
    /// The client closed the stream.
    Eof,
}

fn invalid(code: i32, message: impl Into<String>) -> Frame {
    Frame::Invalid {
        code,
        message: format!("E0707: {}", message.into()),
        id: Value::Null,
    }
}

/// One line without its `\n` (and `\r`), keeping at most the last [`MAX_HEADER_LINE`]
/// bytes; `None` at the end of the stream.
fn read_line(r: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(line));
        }
        any = true;
        let (part, used, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        line.extend_from_slice(part);
        if line.len() > 2 * MAX_HEADER_LINE {
            line.drain(..line.len() - MAX_HEADER_LINE);
        }
        r.consume(used);
        if done {
            break;
        }
    }
    if line.len() > MAX_HEADER_LINE {
        line.drain(..line.len() - MAX_HEADER_LINE);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(line))
}

/// Where `Content-Length:` starts in `line`, any case.
fn content_length_at(line: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"content-length:";
    line.windows(NAME.len())
        .position(|w| w.eq_ignore_ascii_case(NAME))
}

/// Reads the next frame.
pub fn read_frame(r: &mut impl BufRead) -> io::Result<Frame> {
    let mut length: Option<Result<u64, String>> = None;
    let mut any = false;
    loop {
        let Some(line) = read_line(r)? else {
            return Ok(if any {
                invalid(PARSE_ERROR, "the stream ended inside a header")
            } else {
                Frame::Eof
            });
        };
        if line.is_empty() {
            if any {
                break;
            }
            // Blank lines between frames are tolerated.
            continue;
        }
        any = true;
        // A header anywhere in the line: the tail of a body that was longer than its length
        // said, or junk, comes before it.
        if let Some(at) = content_length_at(&line) {
            let value = String::from_utf8_lossy(&line[at + "content-length:".len()..])
                .trim()
                .to_string();
            length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| crate::diag::escape_excerpt(&value, 40)),
            );
        }
    }
    let n = match length {
        None => {
            return Ok(invalid(
                PARSE_ERROR,
                "the header has no `Content-Length`: each message starts with \
                 `Content-Length: N` and a blank line",
            ))
        }
        Some(Err(value)) => {
            return Ok(invalid(
                PARSE_ERROR,
                format!("`Content-Length: {value}` is not a byte count"),
            ))
        }
        Some(Ok(n)) if n > MAX_MESSAGE => {
            // Not read: the body is skipped by resynchronising on the next header.
            return Ok(invalid(
                INVALID_REQUEST,
                format!(
                    "a message of {n} bytes is over the {} MiB limit",
                    MAX_MESSAGE >> 20
                ),
            ));
        }
        Some(Ok(n)) => n,
    };
    let mut body = Vec::new();
    r.take(n).read_to_end(&mut body)?;
    if (body.len() as u64) < n {
        return Ok(invalid(
            PARSE_ERROR,
            format!("the stream ended after {} of {n} body bytes", body.len()),
        ));
    }
    Ok(parse_body(&body))
}

/// A body as a message, or the JSON-RPC error it gets.
fn parse_body(body: &[u8]) -> Frame {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return invalid(PARSE_ERROR, format!("the body is not JSON: {e}")),
    };
    if !value.is_object() {
        return invalid(
            INVALID_REQUEST,
            "a message is one JSON object (batches are not part of LSP)",
        );
    }
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    match serde_json::from_value::<Message>(value) {
        Ok(m) => Frame::Message(m),
        Err(e) => Frame::Invalid {
            code: INVALID_REQUEST,
            message: format!(
                "E0707: not a request, response or notification: {}",
                crate::diag::escape_excerpt(&e.to_string(), 200)
            ),
            id,
        },
    }
}

/// Writes one message body with its header.
pub fn write_body(w: &mut impl Write, body: &str) -> io::Result<()> {
    write!(w, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    w.flush()
}

/// The JSON-RPC error response for an invalid frame.
pub fn error_response(code: i32, message: &str, id: &Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<Frame> {
        let mut r = io::BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut r).unwrap() {
                Frame::Eof => return out,
                f => out.push(f),
            }
        }
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#;

    fn codes(fs: &[Frame]) -> Vec<i32> {
        fs.iter()
            .map(|f| match f {
                Frame::Message(_) => 0,
                Frame::Invalid { code, .. } => *code,
                Frame::Eof => -1,
            })
            .collect()
    }

    #[test]
    fn each_bad_frame_is_one_error_and_the_next_message_still_arrives() {
        let rows: Vec<(Vec<u8>, i32)> = vec![
            (
                framed(r#"{"jsonrpc": "2.0", "id": 1, "method": "#).into_bytes(),
                PARSE_ERROR,
            ),
            (
                framed(r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#).into_bytes(),
                INVALID_REQUEST,
            ),
            (framed("[1,2,3]").into_bytes(), INVALID_REQUEST),
            (
                [
                    b"Content-Length: 4\r\n\r\n".as_slice(),
                    &[0xff, 0xfe, 0xfd, 0xfc],
                ]
                .concat(),
                PARSE_ERROR,
            ),
            (b"Content-Lenth: 5\r\n\r\nhello".to_vec(), PARSE_ERROR),
            (b"Content-Length: -5\r\n\r\n".to_vec(), PARSE_ERROR),
            (
                b"Content-Length: 1000000000000\r\n\r\n{\"a\":1}".to_vec(),
                INVALID_REQUEST,
            ),
            (
                format!("Content-Length: 10\r\n\r\n{PING}").into_bytes(),
                PARSE_ERROR,
            ),
        ];
        for (bad, code) in rows {
            let input = [bad.as_slice(), framed(PING).as_bytes()].concat();
            let fs = frames(&input);
            assert_eq!(
                codes(&fs),
                [code, 0],
                "{:?}: {fs:?}",
                String::from_utf8_lossy(&bad)
            );
        }
    }

    #[test]
    fn lf_only_headers_and_a_content_type_are_read() {
        let input = format!(
            "Content-Type: application/vscode-jsonrpc; charset=utf-8\nContent-Length: {}\n\n{PING}",
            PING.len()
        );
        assert_eq!(codes(&frames(input.as_bytes())), [0]);
    }

    #[test]
    fn an_invalid_request_keeps_its_id() {
        let fs = frames(framed(r#"{"jsonrpc":"2.0","id":3,"method":5}"#).as_bytes());
        match &fs[..] {
            [Frame::Invalid { code, id, .. }] => {
                assert_eq!((*code, id.clone()), (INVALID_REQUEST, json!(3)))
            }
            other => panic!("{other:?}"),
        }
    }

    /// A frame a broken or hostile client might send.
    fn bad_frame() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            // A well-framed body of random bytes.
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| {
                [
                    format!("Content-Length: {}\r\n\r\n", b.len()).into_bytes(),
                    b,
                ]
                .concat()
            }),
            // Header lines with no length, then a blank line.
            "[a-zA-Z: ]{0,40}".prop_map(|h| format!("{h}\r\n\r\n").into_bytes()),
            // A length too large or not a number, then a few bytes of body.
            (
                prop_oneof![
                    Just("99999999999999999999".to_string()),
                    Just("-5".to_string()),
                    (MAX_MESSAGE + 1..u64::MAX).prop_map(|n| n.to_string()),
                    "[a-z]{1,8}",
                ],
                "[a-z{}\\[\\]]{0,16}",
            )
                .prop_map(|(n, body)| format!("Content-Length: {n}\r\n\r\n{body}").into_bytes()),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            ..Default::default()
        })]

        /// Whatever frames come first, the reader never fails, answers each, and still reads
        /// the well-formed message after them.
        #[test]
        fn random_frames_never_stop_the_reader(
            bad in proptest::collection::vec(bad_frame(), 0..8)
        ) {
            let mut input = bad.concat();
            input.extend_from_slice(framed(PING).as_bytes());
            let fs = frames(&input);
            proptest::prop_assert!(fs.len() <= bad.len() + 1, "{:?}", fs);
            match fs.last() {
                Some(Frame::Message(Message::Request(r))) => {
                    proptest::prop_assert_eq!(r.method.as_str(), "shutdown")
                }
                other => proptest::prop_assert!(false, "last frame {:?}", other),
            }
        }
    }

    #[test]
    fn a_huge_header_line_keeps_only_its_tail() {
        let mut input = vec![b'x'; 10 * MAX_HEADER_LINE];
        input.extend_from_slice(framed(PING).as_bytes());
        assert_eq!(codes(&frames(&input)), [0]);
    }
}

//! `venusc lsp` end to end: JSON-RPC with Content-Length framing over the binary's stdio.
//! A reader thread feeds a channel and every wait has a timeout, so no test can hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(30);

struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
}

/// Where the servers of these tests write the stdlib (one directory per test process).
fn stdlib_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("venusc-lsp-stdlib-{}", std::process::id()))
}

impl Client {
    fn start() -> Client {
        Client::start_with_stdlib_dir(&stdlib_dir())
    }

    fn start_with_stdlib_dir(dir: &std::path::Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_venusc"))
            .arg("lsp")
            .env("VENUSC_STDLIB_DIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("venusc starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = n.parse::<usize>().ok();
                    }
                }
                let Some(n) = length else { return };
                let mut body = vec![0; n];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let Ok(v) = serde_json::from_slice::<Value>(&body) else {
                    return;
                };
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            rx,
            next_id: 1,
        }
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m["id"] == json!(id))
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message matching `pred` (others are skipped), or a test failure on timeout.
    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(m) if pred(&m) => return m,
                Ok(_) => {}
                Err(e) => {
                    let _ = self.child.kill();
                    panic!("no matching message from the server: {e}");
                }
            }
        }
    }

    fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let m = self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        });
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }
}

const URI: &str = "file:///nonexistent-venus-test/main.venus";

fn initialized() -> Client {
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert_eq!(
        init["result"]["capabilities"]["hoverProvider"],
        json!(true),
        "{init}"
    );
    c.notify("initialized", json!({}));
    c
}

fn open(c: &mut Client, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "venus", "version": 1, "text": text}}),
    );
}

fn position(text: &str, needle: &str, delta: usize) -> Value {
    let offset = text.find(needle).unwrap() + delta;
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let col = before.rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": col})
}

fn shutdown(mut c: Client) {
    let r = c.request("shutdown", Value::Null);
    assert_eq!(r["result"], Value::Null, "{r}");
    c.notify("exit", Value::Null);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = c.child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            return;
        }
        if Instant::now() > deadline {
            let _ = c.child.kill();
            panic!("venusc lsp did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn lsp_session_diagnostics_completion_definition_hover_change_and_exit() {
    let text = std::fs::read_to_string("examples/invalid/e0301_world_size.venus").unwrap();
    let mut c = initialized();
    open(&mut c, &text);

    // didOpen: E0301 on the `4` of `dp 4`.
    let d = c.diagnostics(URI);
    let e = d
        .iter()
        .find(|d| d["code"] == "E0301")
        .unwrap_or_else(|| panic!("{d:?}"));
    let start = position(&text, "tp 1 dp 4", 8);
    assert_eq!(e["range"]["start"], start);
    assert_eq!(
        e["range"]["end"]["character"],
        json!(start["character"].as_u64().unwrap() + 1)
    );
    assert_eq!(e["severity"], json!(1));

    // Completion at the start of a line inside the plan block.
    let plan_line = position(&text, "  micro_batch 2", 0);
    let r = c.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": URI}, "position": plan_line}),
    );
    let labels: Vec<&str> = r["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    // Keys not yet written are offered; those the plan already sets are not.
    for key in ["recompute", "sp", "cp", "schedule"] {
        assert!(labels.contains(&key), "{labels:?}");
    }
    for key in ["micro_batch", "global_batch", "vpp", "tp", "mfu"] {
        assert!(!labels.contains(&key), "{key} is already set: {labels:?}");
    }

    // Definition of a stdlib name, in a second document.
    let uri2 = "file:///nonexistent-venus-test/other.venus";
    let text2 = "cluster c < gpu h100_sxm dim nvlink fc 8 450GB/s >\n";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri2, "languageId": "venus", "version": 1, "text": text2}}),
    );
    let r = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri2}, "position": position(text2, "h100_sxm", 3)}),
    );
    // The stdlib is a real, read-only file: any client opens the `file://` URI.
    let target = stdlib_dir().join("gpus.venus");
    assert_eq!(
        r["result"]["uri"].as_str().unwrap(),
        format!("file://{}", target.display()),
        "{r}"
    );
    let stdlib_text = std::fs::read_to_string(&target).unwrap();
    assert!(std::fs::metadata(&target).unwrap().permissions().readonly());
    let line = r["result"]["range"]["start"]["line"].as_u64().unwrap() as usize;
    assert!(
        stdlib_text
            .lines()
            .nth(line)
            .unwrap()
            .contains("gpu h100_sxm"),
        "{r}"
    );

    // Hover on `mem_bw`: the doc, the value and its units.
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": URI}, "position": position(&text, "mem_bw", 2)}),
    );
    let hover = r["result"]["contents"]["value"].as_str().unwrap();
    assert!(hover.contains("HBM bandwidth"), "{hover}");
    assert!(hover.contains("3350GB/s"), "{hover}");
    assert!(hover.contains("bytes/s"), "{hover}");

    // didChange to `dp 2`: E0301 disappears.
    let fixed = text.replace("dp 4", "dp 2");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let d = c.diagnostics(URI);
    assert!(d.iter().all(|d| d["code"] != "E0301"), "{d:?}");

    shutdown(c);
}

#[test]
fn lsp_answers_a_malformed_request_with_an_error_and_keeps_serving() {
    let mut c = initialized();
    let r = c.request("textDocument/hover", json!({"garbage": 1}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    let r = c.request("venus/stdlib", json!({"uri": "venus-stdlib:///nope.venus"}));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope.venus"),
        "{r}"
    );
    shutdown(c);
}

impl Client {
    /// Writes raw bytes: frames a well-behaved client would never send.
    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next error response with `id: null` (the answer to a frame that was no message).
    fn frame_error(&mut self) -> Value {
        self.wait(|m| m["id"].is_null() && m.get("error").is_some())
    }
}

fn framed(body: &[u8]) -> Vec<u8> {
    [
        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
        body,
    ]
    .concat()
}

/// The reliability report's M4 table, one row after the other on one server: each bad frame
/// is answered with a JSON-RPC error (-32700 for what is not JSON or not framed, -32600 for
/// JSON that is no message or a body over the limit) and the next request is still served.
#[test]
fn lsp_answers_every_malformed_frame_and_keeps_serving() {
    let mut c = initialized();
    let rows: Vec<(&str, Vec<u8>, i64)> = vec![
        (
            "invalid JSON",
            framed(br#"{"jsonrpc": "2.0", "id": 1, "method": "#),
            -32700,
        ),
        (
            "a batch",
            framed(br#"[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]"#),
            -32600,
        ),
        ("an array", framed(b"[1,2,3]"), -32600),
        (
            "bytes ff fe fd fc",
            framed(&[0xff, 0xfe, 0xfd, 0xfc]),
            -32700,
        ),
        (
            "a misspelt header",
            b"Content-Lenth: 5\r\n\r\nhello".to_vec(),
            -32700,
        ),
        (
            "a negative length",
            b"Content-Length: -5\r\n\r\n".to_vec(),
            -32700,
        ),
        (
            "a length shorter than the body",
            b"Content-Length: 10\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}".to_vec(),
            -32700,
        ),
        (
            "a length of 10^12",
            b"Content-Length: 1000000000000\r\n\r\n{}".to_vec(),
            -32600,
        ),
        (
            "a length of 4*10^9",
            b"Content-Length: 4000000000\r\n\r\n{}".to_vec(),
            -32600,
        ),
    ];
    for (what, bytes, code) in rows {
        c.send_raw(&bytes);
        let e = c.frame_error();
        assert_eq!(e["error"]["code"], json!(code), "{what}: {e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("E0707: "),
            "{what}: {e}"
        );
        // Still serving: a request right after gets its answer.
        let r = c.request("venus/stdlib", json!({"uri": "venus-stdlib:///gpus.venus"}));
        assert!(r["result"]["text"].is_string(), "{what}: {r}");
    }
    // LF-only headers are read as a frame.
    let body = br#"{"jsonrpc":"2.0","id":900,"method":"venus/stdlib","params":{"uri":"venus-stdlib:///gpus.venus"}}"#;
    c.send_raw(
        &[
            format!("Content-Length: {}\n\n", body.len()).as_bytes(),
            body,
        ]
        .concat(),
    );
    let r = c.wait(|m| m["id"] == json!(900));
    assert!(r["result"]["text"].is_string(), "{r}");
    shutdown(c);
}

#[test]
fn lsp_ignores_a_response_sent_before_initialize() {
    let mut c = Client::start();
    c.send(json!({"jsonrpc": "2.0", "id": 99, "result": null}));
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    assert!(init["result"]["capabilities"].is_object(), "{init}");
    c.notify("initialized", json!({}));
    shutdown(c);
}

/// `use "/dev/stdin"` (the server's own input), a FIFO and `/dev/zero` in an open document:
/// each is a diagnostic, and the server answers the next request at once.
#[cfg(unix)]
#[test]
fn lsp_refuses_stdin_fifos_and_devices_as_used_files() {
    let dir = std::env::temp_dir().join(format!("venusc-lsp-use-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.venus");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut c = Client::start();
    let root = format!("file://{}", dir.display());
    c.request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": {}}),
    );
    c.notify("initialized", json!({}));
    let uri = format!("file://{}/main.venus", dir.display());
    let text =
        "use \"/dev/stdin\"\nuse \"fifo.venus\"\nuse \"/dev/zero\"\nmodel m : llama2_7b < >\n";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "venus", "version": 1, "text": text}}),
    );
    let d: Vec<Value> = c
        .diagnostics(&uri)
        .into_iter()
        .filter(|d| d["code"] == "E0107" || d["code"] == "E0109")
        .collect();
    let codes: Vec<&str> = d.iter().map(|d| d["code"].as_str().unwrap()).collect();
    // Outside the workspace folder: E0109 before any read; the FIFO inside it: E0107.
    assert_eq!(codes, ["E0109", "E0107", "E0109"], "{d:?}");
    assert!(
        d[1]["message"].as_str().unwrap().contains("a FIFO"),
        "{d:?}"
    );
    let r = c.request("venus/stdlib", json!({"uri": "venus-stdlib:///gpus.venus"}));
    assert!(r["result"]["text"].is_string(), "{r}");
    shutdown(c);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Random frames over the real stdio (deterministic xorshift bytes, so a failure
/// reproduces): every one is answered with a JSON-RPC error, the server never exits, and the
/// request after them is served.
#[test]
fn lsp_answers_each_of_many_random_frames_and_keeps_serving() {
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut c = initialized();
    let frames = 40;
    for i in 0..frames {
        let len = (next() % 200) as usize;
        // Bytes that are never JSON: `{` opens an object that random bytes never close well.
        let mut body: Vec<u8> = vec![b'{'];
        body.extend((0..len).map(|_| (next() >> 24) as u8));
        let frame = match i % 3 {
            0 => framed(&body),
            1 => format!("X-Junk-{}: {}\r\n\r\n", next() % 1000, next()).into_bytes(),
            _ => format!("Content-Length: {}\r\n\r\n", u64::MAX - next() % 1000).into_bytes(),
        };
        c.send_raw(&frame);
        let e = c.frame_error();
        assert!(
            [-32700, -32600].contains(&e["error"]["code"].as_i64().unwrap()),
            "frame {i}: {e}"
        );
    }
    let r = c.request("venus/stdlib", json!({"uri": "venus-stdlib:///gpus.venus"}));
    assert!(r["result"]["text"].is_string(), "{r}");
    assert!(c.child.try_wait().unwrap().is_none(), "the server exited");
    shutdown(c);
}

#[test]
fn lsp_serves_the_stdlib_by_request_where_no_directory_can_be_written() {
    // A directory under a regular file cannot be created: the `venus-stdlib:` fallback.
    let blocker = std::env::temp_dir().join(format!("venusc-lsp-blocker-{}", std::process::id()));
    std::fs::write(&blocker, "not a directory").unwrap();
    let mut c = Client::start_with_stdlib_dir(&blocker.join("stdlib"));
    c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    c.notify("initialized", json!({}));
    let uri = "file:///nonexistent-venus-test/fallback.venus";
    let text = "cluster c < gpu h100_sxm dim nvlink fc 8 450GB/s >\n";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "venus", "version": 1, "text": text}}),
    );
    let r = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri}, "position": position(text, "h100_sxm", 3)}),
    );
    assert_eq!(r["result"]["uri"], "venus-stdlib:///gpus.venus", "{r}");
    let stdlib = c.request("venus/stdlib", json!({"uri": "venus-stdlib:///gpus.venus"}));
    let line = r["result"]["range"]["start"]["line"].as_u64().unwrap() as usize;
    let stdlib_text = stdlib["result"]["text"].as_str().unwrap();
    assert!(stdlib_text
        .lines()
        .nth(line)
        .unwrap()
        .contains("gpu h100_sxm"));
    shutdown(c);
    let _ = std::fs::remove_file(&blocker);
}

#[test]
fn lsp_answers_each_request_from_the_text_of_the_edits_sent_before_it() {
    // 1,000 edits, each followed at once by a definition request, all sent before any answer
    // is read (the client does not wait, as an editor under typing load does not). Edit i
    // points the cluster's `gpu` at `g{i % 5}`, alternately by a whole-text change and by an
    // incremental one; each answer must name the line of that GPU, never an older text's.
    const GPUS: usize = 5;
    let text_for = |g: usize| {
        let mut t = format!("cluster c < gpu g{g} dim x fc 8 1GB/s >\n");
        for k in 0..GPUS {
            t.push_str(&format!(
                "gpu g{k} < peak 1TFLOP/s memory 1GiB mem_bw 1GB/s >\n"
            ));
        }
        t
    };
    let uri = "file:///nonexistent-venus-test/interleaved.venus";
    let mut c = initialized();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "venus", "version": 1, "text": text_for(0)}}),
    );
    // `cluster c < gpu g` is 17 characters: the digit of the reference is at column 17.
    let digit = json!({"line": 0, "character": 17});
    let mut ids = Vec::new();
    for i in 1..=1000usize {
        let g = i % GPUS;
        let change = if i % 2 == 0 {
            json!({"text": text_for(g)})
        } else {
            json!({"range": {"start": digit, "end": {"line": 0, "character": 18}}, "text": g.to_string()})
        };
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": i + 1}, "contentChanges": [change]}),
        );
        let id = c.next_id;
        c.next_id += 1;
        c.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/definition",
            "params": {"textDocument": {"uri": uri}, "position": digit}}),
        );
        ids.push((id, g));
    }
    for (id, g) in ids {
        let r = c.wait(|m| m["id"] == json!(id));
        assert_eq!(
            r["result"]["range"]["start"]["line"],
            json!(1 + g),
            "request {id} after the edit to g{g}: {r}"
        );
    }
    shutdown(c);
}

//! The language server (`venusc lsp`): JSON-RPC over stdio with lsp-server, the only module
//! that knows lsp-types.
//!
//! Input: LSP messages. Output: responses and `textDocument/publishDiagnostics`. Features:
//! full or incremental text sync into the salsa database (only changed files are recomputed),
//! diagnostics from the same queries as `venusc check` (front end and plan validation), hover
//! (key docs and values, definition summaries with inherited items, derived plan values),
//! go-to-definition (into the stdlib too), completion (keys of the enclosing block, names of
//! the right kind, enum words), document symbols, formatting ([`crate::fmt`]) and quick fixes
//! for diagnostics that carry a [`crate::diag::Fix`]. The answers are computed by
//! [`crate::ide`] as plain data; this module keeps document state, URIs and the protocol loop,
//! and converts between lsp-types and those answers.
//!
//! The stdlib is written at start-up as read-only files into a cache directory
//! (`$XDG_CACHE_HOME/venusc/stdlib-HASH`, see [`write_stdlib_dir`]), and go-to-definition into
//! the stdlib answers with their `file://` URIs, which every client opens. Where nothing can
//! be written, it answers with `venus-stdlib:///gpus.venus` URIs instead, whose text the
//! custom request `venus/stdlib` returns (params `{ "uri": "venus-stdlib:///gpus.venus" }`,
//! result `{ "uri": ..., "text": ... }`). Either document may be `didOpen`ed for hover and
//! navigation inside it; edits to it are ignored.
//!
//! Invariants: this loop is the edge: it may read `use`d files from disk, the queries below
//! it never do. A bad request gets an error response, never a panic (handlers run under
//! `catch_unwind` as a last line of defence).

mod framing;
mod line_index;
mod server;

#[cfg(test)]
mod tests;

use std::panic::{catch_unwind, AssertUnwindSafe};

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types as lsp;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use line_index::LineIndex;
pub use server::{path_to_uri, uri_to_path, Server, STDLIB_REQUEST, STDLIB_SCHEME};

pub use framing::{MAX_MESSAGE, PARSE_ERROR};

/// Runs the server on stdin/stdout until `exit`. The transport is ours ([`framing`]): a
/// malformed frame is answered with a JSON-RPC error and the server keeps running.
pub fn run_stdio() -> Result<(), String> {
    let (connection, client) = Connection::memory();
    let Connection {
        sender: to_server,
        receiver: from_server,
    } = client;
    let stdout = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let out = stdout.clone();
    // Not joined: it may sit in a read of stdin after `exit`; the process ends without it.
    std::thread::spawn(move || {
        let mut input = std::io::BufReader::new(std::io::stdin().lock());
        loop {
            match framing::read_frame(&mut input) {
                Ok(framing::Frame::Message(m)) => {
                    let exit = matches!(&m, Message::Notification(n) if n.method == "exit");
                    // The server sends no requests, so a response answers nothing: dropped
                    // (before `initialize` it would end lsp-server's handshake).
                    if matches!(m, Message::Response(_)) {
                        continue;
                    }
                    if to_server.send(m).is_err() || exit {
                        break;
                    }
                }
                Ok(framing::Frame::Invalid { code, message, id }) => {
                    let body = framing::error_response(code, &message, &id);
                    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
                    if framing::write_body(&mut *w, &body).is_err() {
                        break;
                    }
                }
                Ok(framing::Frame::Eof) | Err(_) => break,
            }
        }
    });
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        for m in from_server {
            let mut w = stdout.lock().unwrap_or_else(|e| e.into_inner());
            m.write(&mut *w)?;
            std::io::Write::flush(&mut *w)?;
        }
        Ok(())
    });
    let result = run(&connection);
    drop(connection);
    let written = writer
        .join()
        .map_err(|_| "the writer thread panicked".to_string())?;
    result?;
    written.map_err(|e| e.to_string())
}

/// The project root a client names: the first workspace folder, else `rootUri`, else
/// `rootPath`.
fn client_root(params: &Value) -> Option<std::path::PathBuf> {
    let folder = params
        .get("workspaceFolders")
        .and_then(|f| f.get(0))
        .and_then(|f| f.get("uri"))
        .and_then(Value::as_str);
    if let Some(uri) = folder.or_else(|| params.get("rootUri").and_then(Value::as_str)) {
        return Some(uri_to_path(uri));
    }
    params
        .get("rootPath")
        .and_then(Value::as_str)
        .map(std::path::PathBuf::from)
}

/// What the server offers.
fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Kind(
            lsp::TextDocumentSyncKind::INCREMENTAL,
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp::OneOf::Left(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![" ".into(), "<".into()]),
            ..Default::default()
        }),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Simple(true)),
        ..Default::default()
    }
}

/// The message loop on an established connection: initialize, then requests and
/// notifications until `shutdown` + `exit` (or the client disconnects).
/// Writes the stdlib into a cache directory, once per stdlib text (the directory name holds a
/// hash of it), so go-to-definition can answer with `file://` URIs that any client opens:
/// `$VENUSC_STDLIB_DIR` if set, else `$XDG_CACHE_HOME/venusc/stdlib-HASH`, else
/// `$HOME/.cache/venusc/stdlib-HASH`. The files are made read-only. `None` (the
/// `venus-stdlib:` URIs then) when nothing can be written.
fn write_stdlib_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let dir = match std::env::var_os("VENUSC_STDLIB_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            cache
                .join("venusc")
                .join(format!("stdlib-{:016x}", stdlib_hash()))
        }
    };
    std::fs::create_dir_all(&dir).ok()?;
    for (name, text) in server::stdlib_files() {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        crate::files::write_atomic(&path, text.as_bytes()).ok()?;
        mark_read_only(&path);
    }
    Some(dir)
}

/// FNV-1a over the stdlib's names and texts: a new stdlib gets a new directory.
fn stdlib_hash() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in server::stdlib_files() {
        for b in name.bytes().chain([0]).chain(text.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Editors then show the stdlib as read-only; failure to do so is harmless.
fn mark_read_only(path: &std::path::Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        let mut perms = meta.permissions();
        perms.set_readonly(true);
        let _ = std::fs::set_permissions(path, perms);
    }
}

pub fn run(connection: &Connection) -> Result<(), String> {
    let (id, init) = connection.initialize_start().map_err(|e| e.to_string())?;
    let result = serde_json::json!({
        "capabilities": capabilities(),
        "serverInfo": { "name": "venusc", "version": env!("CARGO_PKG_VERSION") },
    });
    connection
        .initialize_finish(id, result)
        .map_err(|e| e.to_string())?;
    let mut server = Server::new();
    server.set_root(client_root(&init));
    server.set_stdlib_dir(write_stdlib_dir());
    for message in &connection.receiver {
        match message {
            Message::Request(req) => {
                if connection
                    .handle_shutdown(&req)
                    .map_err(|e| e.to_string())?
                {
                    return Ok(());
                }
                let response = guarded(&req, || handle_request(&mut server, &req));
                send(connection, response.into())?;
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    // `exit` without `shutdown` first: the client gave up on us.
                    return Err("exit without shutdown".into());
                }
                let outcome =
                    catch_unwind(AssertUnwindSafe(|| handle_notification(&mut server, &n)));
                if let Ok(true) = outcome {
                    for params in server.diagnostics_to_publish() {
                        let note =
                            Notification::new("textDocument/publishDiagnostics".into(), params);
                        send(connection, note.into())?;
                    }
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn send(connection: &Connection, message: Message) -> Result<(), String> {
    connection.sender.send(message).map_err(|e| e.to_string())
}

/// Runs a request handler, turning a panic into an internal-error response.
fn guarded(req: &Request, handler: impl FnOnce() -> Response) -> Response {
    catch_unwind(AssertUnwindSafe(handler)).unwrap_or_else(|_| {
        Response::new_err(
            req.id.clone(),
            ErrorCode::InternalError as i32,
            format!("internal error while handling `{}`", req.method),
        )
    })
}

fn params<P: DeserializeOwned>(value: &Value) -> Result<P, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("invalid params: {e}"))
}

/// Why a request failed: the JSON-RPC error code is chosen where the failure is known, never
/// read back from the message.
struct RequestError {
    code: ErrorCode,
    message: String,
}

/// A message alone is a problem with the params (the common case: bad or missing fields).
impl From<String> for RequestError {
    fn from(message: String) -> RequestError {
        RequestError {
            code: ErrorCode::InvalidParams,
            message,
        }
    }
}

impl From<&str> for RequestError {
    fn from(message: &str) -> RequestError {
        RequestError::from(message.to_string())
    }
}

/// Answers one request.
pub fn handle_request(server: &mut Server, req: &Request) -> Response {
    let id = req.id.clone();
    let result: Result<Value, RequestError> = (|| {
        let p = &req.params;
        match req.method.as_str() {
            "textDocument/hover" => {
                let p: lsp::HoverParams = params(p)?;
                let tdp = p.text_document_position_params;
                serde_json::to_value(server.hover(tdp.text_document.uri.as_str(), tdp.position))
            }
            "textDocument/definition" => {
                let p: lsp::GotoDefinitionParams = params(p)?;
                let tdp = p.text_document_position_params;
                serde_json::to_value(
                    server
                        .definition(tdp.text_document.uri.as_str(), tdp.position)
                        .map(lsp::GotoDefinitionResponse::Scalar),
                )
            }
            "textDocument/completion" => {
                let p: lsp::CompletionParams = params(p)?;
                let tdp = p.text_document_position;
                serde_json::to_value(
                    server
                        .completion(tdp.text_document.uri.as_str(), tdp.position)
                        .map(lsp::CompletionResponse::Array),
                )
            }
            "textDocument/documentSymbol" => {
                let p: lsp::DocumentSymbolParams = params(p)?;
                serde_json::to_value(
                    server
                        .document_symbols(p.text_document.uri.as_str())
                        .map(lsp::DocumentSymbolResponse::Nested),
                )
            }
            "textDocument/formatting" => {
                let p: lsp::DocumentFormattingParams = params(p)?;
                serde_json::to_value(server.formatting(p.text_document.uri.as_str()))
            }
            "textDocument/codeAction" => {
                let p: lsp::CodeActionParams = params(p)?;
                serde_json::to_value(
                    server
                        .code_actions(p.text_document.uri.as_str(), p.range)
                        .map(|actions| {
                            actions
                                .into_iter()
                                .map(lsp::CodeActionOrCommand::CodeAction)
                                .collect::<Vec<_>>()
                        }),
                )
            }
            STDLIB_REQUEST => {
                let uri = p.get("uri").and_then(Value::as_str).ok_or(
                    "invalid params: expected `{ \"uri\": \"venus-stdlib:///NAME.venus\" }`",
                )?;
                let text = Server::stdlib_text(uri)
                    .ok_or_else(|| format!("no stdlib document `{uri}`"))?;
                Ok(serde_json::json!({ "uri": uri, "text": text }))
            }
            other => {
                return Err(RequestError {
                    code: ErrorCode::MethodNotFound,
                    message: format!("unknown method `{other}`"),
                });
            }
        }
        .map_err(|e| RequestError::from(e.to_string()))
    })();
    match result {
        Ok(value) => Response::new_ok(id, value),
        Err(e) => Response::new_err(id, e.code as i32, e.message),
    }
}

/// Applies one notification; true when diagnostics may have changed.
pub fn handle_notification(server: &mut Server, n: &Notification) -> bool {
    match n.method.as_str() {
        "textDocument/didOpen" => {
            let Ok(p) = params::<lsp::DidOpenTextDocumentParams>(&n.params) else {
                return false;
            };
            let doc = p.text_document;
            server.open_document(doc.uri.as_str(), doc.version, &doc.text);
            true
        }
        "textDocument/didChange" => {
            let Ok(p) = params::<lsp::DidChangeTextDocumentParams>(&n.params) else {
                return false;
            };
            let doc = p.text_document;
            server.change_document(doc.uri.as_str(), doc.version, &p.content_changes);
            true
        }
        "textDocument/didClose" => {
            let Ok(p) = params::<lsp::DidCloseTextDocumentParams>(&n.params) else {
                return false;
            };
            server.close_document(p.text_document.uri.as_str());
            true
        }
        "workspace/didChangeWatchedFiles" => {
            let Ok(p) = params::<lsp::DidChangeWatchedFilesParams>(&n.params) else {
                return false;
            };
            for change in p.changes {
                server.file_changed_on_disk(change.uri.as_str());
            }
            true
        }
        _ => false,
    }
}

//! What the CLI's test files share: the `native` binary cargo built for them, the repository's
//! root, and the usual ways of running the binary on a project (`native_tests::cli` does the
//! running; it cannot know the binary's path, which only this crate's tests are given).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use native_tests::cli::Run;
use native_tests::serve::Server;

/// The `native` binary that cargo built for these tests.
pub fn native_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_native"))
}

/// The repository's root (this crate is `cli/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `native --project project args...` with no standard input, to its end.
pub fn run(project: &Path, args: &[&str]) -> Output {
    native_tests::cli::run(&native_bin(), project, args)
}

/// [`run`], which must succeed; its standard output.
pub fn ok(project: &Path, args: &[&str]) -> String {
    native_tests::cli::run_ok(&native_bin(), project, args)
}

/// `native args...` in `cwd`, checked through [`Run`].
pub fn run_in(cwd: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_in(&native_bin(), cwd, args, &[])
}

/// `native --project project args...` from another folder, checked through [`Run`].
pub fn run_at(project: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_at(&native_bin(), project, args, &[])
}

/// `native serve` on `project`, on a free port, its standard error not kept.
pub fn serve(project: &Path) -> Server {
    Server::start(&native_bin(), project, false)
}

/// One HTTP/1.1 request; the status and the body as JSON.
pub fn http(addr: &str, method: &str, path: &str, auth: Option<&str>, body: &[u8]) -> (u16, Value) {
    http_within(addr, method, path, auth, body, Duration::from_secs(30))
}

/// [`http`], its answer awaited for up to `wait` (a long poll's).
pub fn http_within(
    addr: &str,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &[u8],
    wait: Duration,
) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before taking the whole body; a reset write is fine then.
    let _ = s.write_all(body);
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v = serde_json::from_str(body).unwrap_or_else(|e| panic!("body {body:?}: {e}"));
    (status, v)
}

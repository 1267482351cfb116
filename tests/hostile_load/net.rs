//! A plain HTTP/1.1 client over `TcpStream`, enough for the suite's requests and for the
//! malformed, slow and endless ones a real client library would not send.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request with `Connection: close` and a `Content-Length`: the status and the body as
/// JSON (a body that is not JSON comes back as a string).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, Value), String> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut s = connect(addr, timeout)?;
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // A server may answer (413) before taking the whole body; a reset write is fine then.
    let _ = s.write_all(body);
    parse(&read_response(&mut s)?)
}

/// Connects with read and write timeouts.
pub fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, String> {
    let s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// Everything the server sends until it closes (or the read timeout).
pub fn read_response(s: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut resp = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset) && !resp.is_empty() => break,
            Err(e) if resp.is_empty() => return Err(format!("no answer: {e}")),
            Err(_) => break,
        }
    }
    Ok(resp)
}

/// The status and body of a response.
pub fn parse(resp: &[u8]) -> Result<(u16, Value), String> {
    let text = String::from_utf8_lossy(resp);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {:?}", &text[..text.len().min(200)]))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v = serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string()));
    Ok((status, v))
}

/// Whether the server has closed `s` (a read sees the end or a reset), without waiting.
pub fn closed(s: &mut TcpStream) -> bool {
    let _ = s.set_nonblocking(true);
    let mut buf = [0u8; 512];
    let shut = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            // Whatever the server said before closing (a 408) is read past.
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => break true,
        }
    };
    let _ = s.set_nonblocking(false);
    shut
}

/// Waits until every one of `conns` is closed by the server, for at most `limit`: how long
/// the last one took, or how many were still open.
pub fn until_all_closed(conns: &mut [TcpStream], limit: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    let mut open: Vec<usize> = (0..conns.len()).collect();
    while !open.is_empty() {
        open.retain(|&i| !closed(&mut conns[i]));
        if open.is_empty() {
            break;
        }
        if t.elapsed() > limit {
            return Err(format!(
                "{} of {} connections still open after {limit:?}",
                open.len(),
                conns.len()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(t.elapsed())
}

//! The OTLP receiver the tests export spans to (issue 55): `tests/otlp_receiver.py`, built on
//! the `opentelemetry-proto` package, a real decoder of what native sends.

use serde_json::Value;

/// The OTLP receiver (`tests/otlp_receiver.py`, on opentelemetry-proto), started on a port of
/// its own; its stdout gives the spans it decoded, one JSON line each.
pub struct Receiver {
    child: std::process::Child,
    /// The port it listens on, on 127.0.0.1 (`http://127.0.0.1:PORT/v1/traces`).
    pub port: u16,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Receiver {
    /// Starts one (python3 with opentelemetry-proto: the test tools' venv, tests/venv.sh).
    pub fn start() -> Self {
        use std::io::BufRead;
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("otlp_receiver.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 (the test tools' venv, tests/venv.sh, has opentelemetry-proto)");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx
                    .send(serde_json::from_str::<Value>(&line).unwrap())
                    .is_err()
                {
                    return;
                }
            }
        });
        let first = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the receiver did not start: is opentelemetry-proto installed (tests/requirements.txt)?");
        let port = first["port"].as_u64().expect("its port") as u16;
        Receiver { child, port, lines }
    }

    /// The `n` spans decoded so far (its output may come a moment after its answer).
    pub fn spans(&self, n: usize) -> Vec<Value> {
        let mut spans: Vec<Value> = Vec::new();
        while spans.len() < n {
            match self.lines.recv_timeout(std::time::Duration::from_secs(10)) {
                Ok(s) => spans.push(s),
                Err(_) => panic!(
                    "the receiver printed {} spans of {n}: {spans:#?}",
                    spans.len()
                ),
            }
        }
        for s in &spans {
            assert!(
                s.get("error").is_none(),
                "the receiver refused a request: {s}"
            );
        }
        spans
    }

    /// Stops it (a collector gone).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

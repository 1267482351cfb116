//! A `native serve` process for end-to-end tests over real HTTP on 127.0.0.1: spawned on a free
//! port, its address read from its first stdout line (the console's URL from its second), killed when dropped (so a failing test
//! leaves no server behind).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `native serve`.
pub struct Server {
    /// The process; its stdout has been taken, its stderr is piped only when asked for.
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The console's URL with its token, from the second stdout line.
    pub console: String,
}

impl Server {
    /// Starts `bin --project project serve --listen 127.0.0.1:0`. With `keep_stderr` the server's
    /// stderr is piped for [`Server::terminate`] to read (a test that makes the server log much
    /// must not keep it, or the unread pipe fills and the server blocks).
    pub fn start(bin: &Path, project: &Path, keep_stderr: bool) -> Self {
        Self::start_with(bin, project, keep_stderr, |_| {})
    }

    /// [`Server::start`], with `configure` adding to the command first (its environment, say).
    pub fn start_with(
        bin: &Path,
        project: &Path,
        keep_stderr: bool,
        configure: impl FnOnce(&mut Command),
    ) -> Self {
        let mut cmd = Command::new(bin);
        configure(&mut cmd);
        let mut child = cmd
            .arg("--project")
            .arg(project)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if keep_stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap();
        let mut first = String::new();
        let mut second = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        out.read_line(&mut second).unwrap();
        let console = second
            .strip_prefix("console: ")
            .unwrap_or_else(|| panic!("second line: {second:?}"))
            .trim_end()
            .to_string();
        let addr = first
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .trim_end()
            .to_string();
        assert!(
            addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
            "{addr}"
        );
        Server {
            child,
            addr,
            console,
        }
    }

    /// Sends SIGTERM and waits for the exit; returns the exit code and stderr (empty unless
    /// the server was started with `keep_stderr`).
    pub fn terminate(mut self) -> (i32, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).unwrap();
        }
        (status.code().expect("killed by a signal"), err)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

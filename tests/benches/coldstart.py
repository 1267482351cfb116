#!/usr/bin/env python3
"""Cold start of each Lambda binary as a ratio to a bare `lambda_runtime` hello binary.

    cargo build --release -p native-invoke -p native-route -p native-queue -p native-http \\
        -p native-tick --bins --example lambda_hello
    python3 tests/benches/coldstart.py [--only NAME,...] [--debug] [--in-place] [--also NAME=PATH ...] [RUNS]
    # CARGO_TARGET_DIR is honoured

(`--only native-http,native-invoke` times only those functions beside lambda_hello, for a build
of just them; `--debug` reads the binaries of a build without --release; `--also` adds binaries kept aside,
e.g. the same function built before a change, to the same alternating run; `--in-place` runs
the binaries where the build left them instead of copies.)

Each binary is first copied into a fresh directory, as a deployment package is unpacked onto
the function's disk: the same bytes start about 10% slower from the file the linker wrote than
from a copy written front to back (2026-12-02: native-route 2.81 ms in place, 2.50 ms copied;
lambda_hello 1.95 and 1.77 ms; 609 and 583 page faults), most likely the page cache's layout
of a file written in pieces.

"Init" is the time from spawning the process to its first GET of
/2018-06-01/runtime/invocation/next on a small Lambda Runtime API served here on 127.0.0.1
(what Lambda reports as Init Duration). The binaries run alternately, RUNS rounds (default 5),
with configuration in the environment as template.yaml sets it and static keys, so that no
network is reached during init; the poll is never answered, and the process is killed. Prints
the median and the fastest init of each, its ratio to the hello binary, and the binary sizes.
"""

import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
def parse_args(argv):
    debug, in_place, also, only, rest = False, False, [], None, []
    it = iter(argv)
    for a in it:
        if a == "--only":
            only = set(next(it, "").split(","))
        elif a == "--debug":
            debug = True
        elif a == "--in-place":
            in_place = True
        elif a == "--also":
            name, _, path = next(it, "").partition("=")
            if not name or not path:
                sys.exit("--also takes NAME=PATH, e.g. --also invoke-before=/tmp/native-invoke")
            also.append((name, Path(path)))
        else:
            rest.append(a)
    return debug, in_place, also, only, rest


DEBUG, IN_PLACE, ALSO, ONLY, ARGS = parse_args(sys.argv[1:])
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / ("debug" if DEBUG else "release")
BINARIES = [
    ("lambda_hello", TARGET / "examples" / "lambda_hello"),
    ("native-invoke", TARGET / "native-invoke"),
    ("native-route", TARGET / "native-route"),
    ("native-queue", TARGET / "native-queue"),
    ("native-http", TARGET / "native-http"),
    ("native-tick", TARGET / "native-tick"),
]
if ONLY is not None:
    # lambda_hello is the yardstick of every ratio: always kept.
    BINARIES = [(n, p) for n, p in BINARIES if n == "lambda_hello" or n in ONLY]
BINARIES += ALSO


class Api(BaseHTTPRequestHandler):
    """Records the first poll for the next invocation, then holds the request open."""

    polled = threading.Event()
    at = 0.0

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("/2018-06-01/runtime/invocation/next"):
            if not Api.polled.is_set():
                Api.at = time.perf_counter()
                Api.polled.set()
            time.sleep(2)  # the process is killed meanwhile
        self.close_connection = True


def init_once(binary, port):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": binary.name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{binary.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "coldstart",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "NATIVE_TABLE": "native-table",
        "NATIVE_EVENTS_QUEUE_URL": "http://127.0.0.1:9/events",
        "NATIVE_WORK_QUEUE_URL": "http://127.0.0.1:9/work",
        "NATIVE_EVENTS_DLQ_URL": "http://127.0.0.1:9/events-dlq",
        "NATIVE_WORK_DLQ_URL": "http://127.0.0.1:9/work-dlq",
        "NATIVE_SCRIPTS_BUCKET": "bench-scripts",
        "NATIVE_BUCKETS": '{"In": "bench-in", "Out": "bench-out"}',
        "NATIVE_BATCH_BUCKET": "bench-batch",
        "NATIVE_BATCH_PREFIX": "tenants/",
        # As the template sets them: scripts' calls under the tenant role (an STS client),
        # callback URLs signed with the deployment's secret.
        "NATIVE_TENANT_ROLE_ARN": "arn:aws:iam::123456789012:role/native-tenant",
        "NATIVE_CALLBACK_SECRET": "bench-callback-secret-0123456789abcdef0123456789abcdef",
        "NATIVE_PUBLIC_URL": "https://bench.lambda-url.us-east-1.on.aws/",
    }
    Api.polled.clear()
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not Api.polled.wait(10):
            proc.kill()
            err = proc.stderr.read().decode(errors="replace")[-2000:]
            sys.exit(f"{binary.name} did not poll the runtime API within 10 s; stderr:\n{err}")
        return Api.at - start
    finally:
        proc.kill()
        proc.wait()


def main():
    runs = int(ARGS[0]) if ARGS else 5
    missing = [str(p) for name, p in BINARIES if not p.exists() and name != "native-tick"]
    missing += [str(p) for _, p in ALSO if not p.exists()]
    if missing:
        sys.exit("build first (see the header of this script); missing: " + ", ".join(missing))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    binaries = [(n, p) for n, p in BINARIES if p.exists()]
    if not IN_PLACE:
        copies = Path(tempfile.mkdtemp(prefix="coldstart-"))
        atexit.register(shutil.rmtree, copies, True)
        for i, (name, path) in enumerate(binaries):
            # One directory each: two binaries of the same file name may be compared.
            (copies / str(i)).mkdir()
            copy = copies / str(i) / path.name
            shutil.copy2(path, copy)
            binaries[i] = (name, copy)
    times = {name: [] for name, _ in binaries}
    for _ in range(runs):
        for name, path in binaries:
            times[name].append(init_once(path, port))
    base = statistics.median(times["lambda_hello"])
    where = "in place" if IN_PLACE else "copies"
    print(f"init ({TARGET.name} build, {where}), {runs} alternating runs; ratio of medians to lambda_hello")
    width = max(15, *(len(n) for n, _ in binaries))
    print(f"{'binary':<{width}} {'median':>9} {'fastest':>9} {'ratio':>6} {'size':>9}")
    for name, path in binaries:
        med = statistics.median(times[name])
        size = path.stat().st_size / 1e6
        print(f"{name:<{width}} {med * 1e3:>7.2f}ms {min(times[name]) * 1e3:>7.2f}ms {med / base:>6.2f} {size:>7.1f}MB")


if __name__ == "__main__":
    main()

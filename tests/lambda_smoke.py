#!/usr/bin/env python3
"""Runs the function binaries as Lambda would, against moto, and times their cold start.

    python3 tests/lambda_smoke.py [--release]

Needs moto at AWS_ENDPOINT_URL (tests/moto.sh starts it and runs this) and the binaries built
(`cargo build -p native-invoke -p native-route -p native-queue -p native-tick -p native-http -p native-server
-p native-cli [--release]`; it also starts the Fargate server binary on a free port; the `native` command makes the http function's API key, as an operator would).

It provisions what template.yaml makes (named as the stack `native` in moto's account
123456789012, so that events/*.json apply unchanged), uploads the `hello` example tenant to the
scripts bucket as `native deploy` would, then for each function starts its binary against a
small Lambda Runtime API served here, hands it its sample event from events/, and checks the
answer. "init" is the time from spawning the process to its first poll of the runtime API for an
event (what Lambda reports as Init Duration: the configuration; SDK clients are made when first
used); "first response" adds the first event's work, including the clients it uses and moto's
round trips to load the tenant.
"""

import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The stack as infra/local_stack.py makes it in moto (what an operator runs before
# `cargo lambda watch`): the smoke run checks that script too.
sys.path.insert(0, str(ROOT / "infra"))
from local_stack import ACCOUNT, REGION, name, provision  # noqa: E402


class RuntimeApi(BaseHTTPRequestHandler):
    """The Lambda Runtime API (2018-06-01): next invocation, response, errors."""

    events: "queue.Queue[tuple[str, bytes]]" = queue.Queue()
    results: "queue.Queue[tuple[str, str, bytes]]" = queue.Queue()
    polls: "queue.Queue[float]" = queue.Queue()

    def log_message(self, *args):
        pass

    def do_GET(self):
        if not self.path.endswith("/runtime/invocation/next"):
            self.send_error(404)
            return
        self.polls.put(time.perf_counter())  # the first poll ends the function's init
        req_id, body = self.events.get()
        if not req_id:  # the process is gone; just end this long-poll
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Lambda-Runtime-Aws-Request-Id", req_id)
        self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 60_000))
        self.send_header(
            "Lambda-Runtime-Invoked-Function-Arn",
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:smoke",
        )
        self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        parts = self.path.strip("/").split("/")
        kind = parts[-1]  # response | error (invocation or init)
        self.results.put((kind, parts[-2] if len(parts) > 1 else "", data))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()


def run(binary, event_file, env, replace=None):
    # A fresh API per process: a killed process leaves a long-poll behind that would swallow
    # the next event.
    api = type("Api", (RuntimeApi,), {"events": queue.Queue(), "results": queue.Queue()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), api)
    server.daemon_threads = True
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    body = (ROOT / "events" / event_file).read_bytes()
    for old, new in (replace or {}).items():
        body = body.replace(old.encode(), new.encode())
    req_id = str(uuid.uuid4())
    api.events.put((req_id, body))
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.update(
        {
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
            "AWS_LAMBDA_FUNCTION_NAME": binary,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{binary}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "smoke",
        }
    )
    while not api.polls.empty():
        api.polls.get()
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary_path(binary))], env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        kind, got_id, data = api.results.get(timeout=60)
        elapsed_ms = (time.perf_counter() - start) * 1000
        init_ms = (api.polls.get(timeout=1) - start) * 1000
    finally:
        proc.kill()
        logged, err = proc.communicate()
        # Records go to stdout (JSON lines, as CloudWatch reads them), the tracing
        # subscriber's to stdout too; both are checked together.
        err = err + logged
        api.events.put(("", b""))  # releases the dead process's long-poll
        server.shutdown()
    if kind != "response" or got_id != req_id:
        sys.exit(f"{binary}: expected a response to {req_id}, got {kind} {got_id}: {data!r}\nstderr:\n{err.decode()}")
    run.last_request_id = req_id
    return (init_ms, elapsed_ms), json.loads(data), err.decode()


def check_metrics(binary, logged):
    """The run's script wrote an EMF record (see docs/aws.md, Errors, logs, metrics and alarms) of
    its tenant, and its records carry Lambda's request id."""
    records = []
    for line in logged.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    emf = [r for r in records if isinstance(r, dict) and "_aws" in r]
    assert emf, f"{binary}: no EMF record in its output:\n{logged}"
    for r in emf:
        directive = r["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == "native" and directive["Dimensions"] == [["tenant"]], r
        assert r["tenant"] == "hello" and r["Invocations"] == 1, r
        assert r.get("aws_request_id") == run.last_request_id, (binary, r)


def check_runtime_log(binary, logged):
    """The SDK's `tracing` events went through native's own subscriber (observe::runtime_log)
    at the levels RUST_LOG gave."""
    records = []
    for line in logged.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and "target" in r:
            records.append(r)
    sdk = [r for r in records if r["target"].startswith("aws_smithy_runtime") and r["level"] == "debug"]
    assert sdk, f"{binary}: no debug record of aws_smithy_runtime:\n{logged}"
    assert all(isinstance(r.get("msg", ""), str) and r["ts_ms"] > 0 for r in sdk), sdk[:3]
    others = [r for r in records if r["level"] in ("debug", "trace") and not r["target"].startswith("aws_smithy_runtime")]
    assert not others, f"{binary}: debug records of other crates: {others[:3]}"
    warned = [line for line in logged.splitlines() if "RUST_LOG directive `verbose` ignored" in line]
    assert len(warned) == 1 and json.loads(warned[0])["level"] == "warn", (binary, warned)


PROFILE = "lambda" if "--lambda" in sys.argv else "release" if "--release" in sys.argv else "debug"


def binary_path(binary):
    """The binary of `cargo build [--release]`, or with --lambda the bootstrap that
    `cargo lambda build --release` makes."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if PROFILE == "lambda":
        return target / "lambda" / binary / "bootstrap"
    return target / PROFILE / binary


def main():
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        sys.exit("AWS_ENDPOINT_URL is not set: run tests/moto.sh, which starts moto and runs this")
    for b in ("native-invoke", "native-route", "native-queue", "native-tick", "native-http", "native-server"):
        if not binary_path(b).exists():
            sys.exit(f"{binary_path(b)} is missing: cargo build -p native-invoke -p native-route -p native-queue -p native-tick -p native-http -p native-server -p native-cli" + (" --release" if PROFILE == "release" else ""))
    s3, sqs, urls, env = provision(endpoint)

    rows = []
    ms, out, logged = run("native-invoke", "invoke.json", env)
    assert out == {"key": "greetings/Ada.json"}, out
    check_metrics("native-invoke", logged)
    rows.append(("native-invoke", ms))

    otlp_smoke(env, ms)

    ms, out, err = run("native-route", "route.json", env)
    assert out == {"batchItemFailures": []}, (out, err)
    check_metrics("native-route", err)
    msgs = sqs.receive_message(QueueUrl=urls["work"], MaxNumberOfMessages=10).get("Messages", [])
    assert any(json.loads(m["Body"])["script"] == "finish" for m in msgs), msgs
    rows.append(("native-route", ms))

    ms, out, err = run("native-queue", "queue.json", env)
    assert out == {"batchItemFailures": []}, (out, err)
    text = s3.get_object(Bucket=name("out"), Key="hello/results/Ada.txt")["Body"].read().decode()
    assert text.endswith("Ada!"), text
    check_metrics("native-queue", err)
    rows.append(("native-queue", ms))

    # The timer tick on its schedule's event: no timer is set yet, so it looks at no tenant and
    # makes one store call (the index); no tenant has schedules, so none is sent.
    # With RUST_LOG raising one crate of the SDK to debug: its events come out as JSON records
    # of that crate, no other crate's debug events do, and a directive not understood is named.
    ms, out, err = run("native-tick", "tick.json", {**env, "RUST_LOG": "aws_smithy_runtime=debug,verbose"})
    timers, schedules = out["timers"], out["schedules"]
    assert timers["fired"] == 0 and timers["calls"] == 1 and timers["errors"] == [], (out, err)
    assert schedules["fired"] == 0 and schedules["errors"] == [], (out, err)
    rows.append(("native-tick", ms))
    check_runtime_log("native-tick", err)

    # The http function behind a function URL, with a key made by `native keys create` in
    # the table, as an operator makes one for a deployment.
    native = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / ("debug" if PROFILE == "debug" else "release") / "native"
    key = subprocess.run(
        [str(native), "keys", "create", "hello", "--name", "smoke", "--table", env["NATIVE_TABLE"]],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()[0]
    ms, out, err = run("native-http", "http.json", env, {"NATIVE_API_KEY": key})
    assert out["statusCode"] == 200, (out, err)
    assert json.loads(out["body"]) == {"key": "greetings/Grace.json"}, out
    assert key not in err, "the key was logged"
    check_metrics("native-http", err)
    rows.append(("native-http", ms))
    # A callback URL made by a script behind the function URL starts at the domain the request
    # came to (NATIVE_PUBLIC_URL is not set on this function: see template.yaml).
    s3.put_object(
        Bucket=name("scripts"),
        Key="hello/scripts/callback_probe.luau",
        Body=b'function on_invoke(ctx, ev) return { url = native.barrier.callback_url("b1", "m1") } end',
    )
    signed_env = dict(env, NATIVE_CALLBACK_SECRET="s" * 64)
    _, out, err = run(
        "native-http", "http.json", signed_env,
        {"NATIVE_API_KEY": key, "/v1/invoke/start": "/v1/invoke/callback_probe"},
    )
    assert out["statusCode"] == 200, (out, err)
    url = json.loads(out["body"])["url"]
    assert url.startswith("https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws/v1/callback/"), url
    # A script that chooses its answer with native.response: the function URL answers with its
    # status, headers and body, sandboxed, as native serve does.
    s3.put_object(
        Bucket=name("scripts"),
        Key="hello/scripts/reply_probe.luau",
        Body=b'function on_invoke(ctx, ev) return native.response(422, { error = "bad" }, { ["X-Reason"] = "validation" }) end',
    )
    _, out, err = run(
        "native-http", "http.json", env,
        {"NATIVE_API_KEY": key, "/v1/invoke/start": "/v1/invoke/reply_probe"},
    )
    assert out["statusCode"] == 422, (out, err)
    assert json.loads(out["body"]) == {"error": "bad"}, out
    headers = {k.lower(): v for k, v in out.get("headers", {}).items()}
    assert headers.get("x-reason") == "validation", out
    assert headers.get("content-security-policy") == "sandbox", out
    # And without a valid key: 401 in the Connect error shape, nothing run.
    _, out, err = run("native-http", "http.json", env, {"NATIVE_API_KEY": "nk_" + "0" * 16 + "_" + "1" * 64})
    assert out["statusCode"] == 401, (out, err)
    assert json.loads(out["body"])["code"] == "unauthenticated", out

    # Grackle's service behind the function URL, in the binary forms a generated client sends:
    # Connect binary (application/proto) and gRPC-Web, the body base64 both ways as function
    # URLs carry binary bodies. (gRPC itself needs HTTP/2 trailers, which a function URL does
    # not carry: docs/rendezvous.md.) GetNamespaceRequest { namespace_name = "default" }:
    get_default = bytes([0x0A, 7]) + b"default"
    grackle = {"NATIVE_API_KEY": key, "/v1/invoke/start": "/com.evrblk.grackle.v1beta.GrackleApi/GetNamespace",
               '"isBase64Encoded": false': '"isBase64Encoded": true'}
    for content_type, body in (
        ("application/proto", get_default),
        ("application/grpc-web+proto", bytes([0]) + len(get_default).to_bytes(4, "big") + get_default),
    ):
        replace = dict(grackle, **{
            '"content-type": "application/json"': f'"content-type": "{content_type}"',
            '"body": "{\\"name\\":\\"Grace\\"}"': '"body": "' + base64.b64encode(body).decode() + '"',
        })
        _, out, err = run("native-http", "http.json", env, replace)
        assert out["statusCode"] == 200 and out.get("isBase64Encoded"), (content_type, out, err)
        answer = base64.b64decode(out["body"])
        if content_type == "application/grpc-web+proto":
            n = int.from_bytes(answer[1:5], "big")
            assert answer[5 + n:].endswith(b"grpc-status:0\r\n"), answer
            answer = answer[5:5 + n]
        # GetNamespaceResponse { namespace = 1 { name = 1 "default" ... } }
        assert answer[0] == 0x0A and answer[2:4] == bytes([0x0A, 7]) and answer[4:11] == b"default", answer

    # A function whose configuration is wrong does not start, and says which variable and what
    # to do in one line (not the error's fields in braces).
    bad = {**os.environ, **env, "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "NATIVE_BUCKETS": '{"In": "Bad_Name"}'}
    p = subprocess.run([str(binary_path("native-invoke"))], env=bad, capture_output=True, text=True, timeout=30)
    assert p.returncode != 0, p
    assert p.stderr.startswith("Error: environment: NATIVE_BUCKETS (buckets.map.In):"), p.stderr
    assert "Config {" not in p.stderr, p.stderr

    # The Fargate server, started on a free port against moto and called over HTTP; SIGTERM
    # stops it with exit 0.
    server_smoke(env, key)

    print(f"| function | binary ({PROFILE}) | init: start to first poll | start to first response |")
    print("|---|---|---|---|")
    for b, (init_ms, ms) in rows:
        size = binary_path(b).stat().st_size / (1024 * 1024)
        print(f"| {b} | {size:.1f} MiB | {init_ms:.1f} ms | {ms:.0f} ms |")


def otlp_smoke(env, baseline):
    """OpenTelemetry export from a Lambda function (issue 55): with OTEL_EXPORTER_OTLP_ENDPOINT
    at a collector, the run's span and its calls' child spans reach it before the function
    answers (the process is killed as soon as it has); with a collector that accepts and
    never answers, the answer still comes, later by the flush's bound (200 ms) at most, well
    within the 2 s a send may wait."""
    import otlp_receiver

    spans = []
    otlp_receiver.sink = spans.append
    server = ThreadingHTTPServer(("127.0.0.1", 0), otlp_receiver.Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}"}
    try:
        _, out, logged = run("native-invoke", "invoke.json", {**env, **endpoint})
    finally:
        server.shutdown()
    assert out == {"key": "greetings/Ada.json"}, out
    assert not [s for s in spans if "error" in s], spans
    runs = [s for s in spans if s["name"] == "on_invoke start"]
    assert len(runs) == 1, (spans, logged)
    calls = [s for s in spans if s["parent_span_id"] == runs[0]["span_id"]]
    assert calls and all(c["kind"] == 3 and c["trace_id"] == runs[0]["trace_id"] for c in calls), spans
    assert any(c["name"] == "bucket put" for c in calls), calls

    import socket

    stalled = socket.socket()
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(16)
    try:
        endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{stalled.getsockname()[1]}"}
        (_, ms), out, logged = run("native-invoke", "invoke.json", {**env, **endpoint})
    finally:
        stalled.close()
    assert out == {"key": "greetings/Ada.json"}, (out, logged)
    assert ms < baseline[1] + 1200, f"the answer waited {ms:.0f} ms against {baseline[1]:.0f} ms without a collector"


def server_smoke(env, key):
    import signal
    import urllib.error
    import urllib.request

    full_env = dict(os.environ)
    full_env.update(env)
    full_env["NATIVE_LISTEN"] = "127.0.0.1:0"
    proc = subprocess.Popen(
        [str(binary_path("native-server"))], env=full_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("listening on http://127.0.0.1:"), first
        base = first.split("listening on ", 1)[1].strip()
        with urllib.request.urlopen(base + "/healthz", timeout=30) as r:
            assert r.status == 200 and json.loads(r.read()) == {"status": "ok"}
        req = urllib.request.Request(
            base + "/v1/invoke/start", data=b'{"name":"Hedy"}', method="POST",
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            assert json.loads(r.read()) == {"key": "greetings/Hedy.json"}
        try:
            urllib.request.urlopen(urllib.request.Request(base + "/v1/invoke/start", data=b"{}", method="POST"), timeout=30)
            raise AssertionError("a request without a key was answered")
        except urllib.error.HTTPError as e:
            assert e.code == 401 and json.loads(e.read())["code"] == "unauthenticated"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        err = proc.stderr.read()
        assert code == 0, (code, err)
        assert "SIGTERM" in err and key not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()

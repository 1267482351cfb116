"""An OTLP/HTTP trace receiver for tests/tests/trace.rs (issue 55): it decodes each
`POST /v1/traces` with the OpenTelemetry project's own protobuf classes (PyPI's
opentelemetry-proto), so native's hand-written messages are checked by a real decoder, and
prints every span as one JSON line on stdout. The first line is `{"port": N}`, the port it
listens on (127.0.0.1, picked by the system). It answers 200 with an empty
ExportTraceServiceResponse, as a collector does; anything it cannot decode is a 400 and a
`{"error": ...}` line.

    python3 tests/otlp_receiver.py
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def out(record):
    """Where each decoded span goes: a JSON line on stdout (tests/lambda_smoke.py, which
    runs this receiver in its own process, collects them instead)."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


sink = out


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        req = trace_service_pb2.ExportTraceServiceRequest()
        try:
            if self.path != "/v1/traces":
                raise ValueError(f"path {self.path}")
            if self.headers.get("Content-Type") != "application/x-protobuf":
                raise ValueError(f"content type {self.headers.get('Content-Type')}")
            req.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - every failure is the test's to see
            sink({"error": str(e)})
            self.send_response(400)
            self.end_headers()
            return
        for rs in req.resource_spans:
            resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    sink({
                        "service": resource.get("service.name"),
                        "scope": ss.scope.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attributes": {kv.key: value(kv.value) for kv in s.attributes},
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in s.links],
                        "events": [{
                            "name": e.name,
                            "time": e.time_unix_nano,
                            "attributes": {kv.key: value(kv.value) for kv in e.attributes},
                        } for e in s.events],
                        "dropped_events": s.dropped_events_count,
                        "status": s.status.code,
                        "status_message": s.status.message,
                    })
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", 0), Handler)
    out({"port": server.server_address[1]})
    server.serve_forever()

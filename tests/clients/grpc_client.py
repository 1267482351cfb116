"""Grackle's own barrier and namespace test cases over gRPC, with Python's grpcio and code that
grpc_tools.protoc generated from the shipped proto (shared/proto/grackle-v1beta.proto) at test
time: the same cases as tests/clients/connect/cases.mjs (ported from evrblk/grackle's
pkg/server/v1beta/integration_test, pkg/barriers/core_test.go and validators_test.go, and seed
003's example workflow), where native's contract wins over Grackle in the places noted there.

    python grpc_client.py 127.0.0.1:PORT KEY

Prints `RESULT {json}` with the pass count, which cli/tests/clients.rs reads.
"""

import concurrent.futures
import importlib
import json
import sys
import time

import grpc

pb = importlib.import_module("grackle_v1beta_pb2")
pbg = importlib.import_module("grackle_v1beta_pb2_grpc")

C = grpc.StatusCode
TEN_MIN = 600
TRIPPED = pb.BARRIER_WAIT_OUTCOME_TRIPPED
TIMED_OUT = pb.BARRIER_WAIT_OUTCOME_TIMED_OUT


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def eq(got, want, what):
    if got != want:
        raise Failure(f"{what}: got {got!r}, want {want!r}")


class Client:
    """The generated stub, with the API key as gRPC metadata on every call."""

    def __init__(self, channel, key):
        self.stub = pbg.GrackleApiStub(channel)
        self.md = [("authorization", f"Bearer {key}")]

    def __getattr__(self, method):
        call = getattr(self.stub, method)
        request_type = getattr(pb, f"{method}Request")

        def invoke(timeout=None, **fields):
            return call(request_type(**fields), metadata=self.md, timeout=timeout)

        return invoke


def fails(fn, code, what, contains=None):
    try:
        fn()
    except grpc.RpcError as e:
        eq(e.code(), code, f"{what} ({e.details()})")
        if contains:
            check(contains in (e.details() or ""), f"{what}: message {e.details()!r} lacks {contains!r}")
        return
    raise Failure(f"{what}: succeeded, want {code}")


def reset(c):
    while True:
        others = [n.name for n in c.ListNamespaces(limit=250).namespaces if n.name != "default"]
        for n in others:
            c.DeleteNamespace(namespace_name=n)
        if not others:
            break
    while True:
        bs = c.ListBarriers(namespace_name="default", limit=250).barriers
        for b in bs:
            c.DeleteBarrier(namespace_name="default", barrier_name=b.name)
        if not bs:
            break


def barrier(c, ns, name, n, **extra):
    return c.CreateBarrier(
        namespace_name=ns, barrier_name=name, expected_processes=n,
        delete_inactive_after_seconds=TEN_MIN, **extra,
    ).barrier


def arrive(c, ns, name, p, g, metadata=None):
    return c.ArriveAtBarrier(
        namespace_name=ns, barrier_name=name, process_id=p, expected_generation=g,
        metadata=metadata or {},
    )


def nul(n):
    return "\0" * n


V = "validname"
VALIDATORS = {
    "CreateNamespace": [
        ("empty request", {}, True),
        ("empty name", {"name": ""}, True),
        ("name too long", {"name": nul(129)}, True),
        ("invalid name characters", {"name": "invalid name"}, True),
        ("description too long", {"name": V, "description": nul(1025)}, True),
        ("valid request", {"name": V, "description": "Valid description"}, False),
    ],
    "GetNamespace": [
        ("empty request", {}, True),
        ("namespace name too long", {"namespace_name": nul(129)}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name"}, True),
        ("valid request", {"namespace_name": V}, False),
    ],
    "UpdateNamespace": [
        ("empty request", {}, True),
        ("namespace name too long", {"namespace_name": nul(129), "expected_version": 1}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name", "expected_version": 1}, True),
        ("description too long", {"namespace_name": V, "description": nul(1025), "expected_version": 1}, True),
        ("valid request", {"namespace_name": V, "description": "Valid description", "expected_version": 1}, False),
    ],
    "DeleteNamespace": [
        ("empty request", {}, True),
        ("namespace name too long", {"namespace_name": nul(129)}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name"}, True),
        ("valid request", {"namespace_name": V}, False),
    ],
    "ListNamespaces": [
        ("empty request", {}, False),
        ("pagination token too long", {"pagination_token": nul(1025), "limit": 50}, True),
        ("limit too high", {"limit": 251}, True),
        ("negative limit", {"limit": -1}, True),
        ("edge case: limit at maximum", {"limit": 250}, False),
        ("edge case: pagination token at maximum length", {"pagination_token": nul(1024), "limit": 50}, True),
        ("valid request", {"limit": 50}, False),
        ("made-up pagination token", {"pagination_token": "dGVzdA=="}, True),
    ],
    "CreateBarrier": [
        ("empty request", {}, True),
        ("missing namespace name", {"barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("missing barrier name", {"namespace_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name", "barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("invalid barrier name characters", {"namespace_name": V, "barrier_name": "invalid name", "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("namespace name too long", {"namespace_name": nul(129), "barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("barrier name too long", {"namespace_name": V, "barrier_name": nul(129), "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("description too long", {"namespace_name": V, "barrier_name": V, "description": nul(1025), "expected_processes": 3, "delete_inactive_after_seconds": 3600}, True),
        ("expected processes zero", {"namespace_name": V, "barrier_name": V, "expected_processes": 0, "delete_inactive_after_seconds": 3600}, True),
        ("delete inactive after seconds zero", {"namespace_name": V, "barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 0}, True),
        ("delete inactive after seconds negative", {"namespace_name": V, "barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": -1}, True),
        ("valid request", {"namespace_name": V, "barrier_name": V, "expected_processes": 3, "delete_inactive_after_seconds": 3600}, False),
        ("valid request with description", {"namespace_name": V, "barrier_name": V, "description": "Valid description", "expected_processes": 3, "delete_inactive_after_seconds": 3600}, False),
    ],
    "ListBarriers": [
        ("empty request", {}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name"}, True),
        ("namespace name too long", {"namespace_name": nul(129)}, True),
        ("invalid pagination token (not base64)", {"namespace_name": V, "pagination_token": "invalid-base64!@#"}, True),
        ("pagination token too long", {"namespace_name": V, "pagination_token": nul(1025)}, True),
        ("limit too high", {"namespace_name": V, "limit": 251}, True),
        ("negative limit", {"namespace_name": V, "limit": -1}, True),
        ("valid request", {"namespace_name": V}, False),
    ],
    "GetBarrier": [
        ("empty request", {}, True),
        ("missing namespace name", {"barrier_name": V}, True),
        ("missing barrier name", {"namespace_name": V}, True),
        ("invalid namespace name characters", {"namespace_name": "invalid name", "barrier_name": V}, True),
        ("invalid barrier name characters", {"namespace_name": V, "barrier_name": "invalid name"}, True),
        ("namespace name too long", {"namespace_name": nul(129), "barrier_name": V}, True),
        ("barrier name too long", {"namespace_name": V, "barrier_name": nul(129)}, True),
        ("valid request", {"namespace_name": V, "barrier_name": V}, False),
    ],
    "DeleteBarrier": [
        ("empty request", {}, True),
        ("missing namespace name", {"barrier_name": V}, True),
        ("missing barrier name", {"namespace_name": V}, True),
        ("invalid barrier name characters", {"namespace_name": V, "barrier_name": "invalid name"}, True),
        ("barrier name too long", {"namespace_name": V, "barrier_name": nul(129)}, True),
        ("valid request", {"namespace_name": V, "barrier_name": V}, False),
    ],
    "UpdateBarrier": [
        ("empty request", {}, True),
        ("missing barrier name", {"namespace_name": V, "description": "desc", "expected_processes": 3, "expected_version": 1, "delete_inactive_after_seconds": 3600}, True),
        ("invalid barrier name characters", {"namespace_name": V, "barrier_name": "invalid name", "expected_processes": 3, "expected_version": 1, "delete_inactive_after_seconds": 3600}, True),
        ("description too long", {"namespace_name": V, "barrier_name": V, "description": nul(1025), "expected_processes": 3, "expected_version": 1, "delete_inactive_after_seconds": 3600}, True),
        ("expected_processes zero", {"namespace_name": V, "barrier_name": V, "expected_processes": 0, "expected_version": 1, "delete_inactive_after_seconds": 3600}, True),
        ("delete inactive after seconds zero", {"namespace_name": V, "barrier_name": V, "expected_processes": 3, "expected_version": 1}, True),
        ("zero expected version", {"namespace_name": V, "barrier_name": V, "expected_processes": 5, "delete_inactive_after_seconds": 3600}, True),
        ("valid request", {"namespace_name": V, "barrier_name": V, "description": "Valid description", "expected_processes": 5, "expected_version": 1, "delete_inactive_after_seconds": 3600}, False),
    ],
    "ArriveAtBarrier": [
        ("empty request", {}, True),
        ("missing process id", {"namespace_name": V, "barrier_name": V, "expected_generation": 1}, True),
        ("invalid process id characters", {"namespace_name": V, "barrier_name": V, "process_id": "invalid process id", "expected_generation": 1}, True),
        ("process id too long", {"namespace_name": V, "barrier_name": V, "process_id": nul(129), "expected_generation": 1}, True),
        ("expected generation zero", {"namespace_name": V, "barrier_name": V, "process_id": "proc1", "expected_generation": 0}, True),
        ("valid request", {"namespace_name": V, "barrier_name": V, "process_id": "proc1", "expected_generation": 1}, False),
    ],
    "WaitAtBarrier": [
        ("empty request", {}, True),
        ("invalid barrier name characters", {"namespace_name": V, "barrier_name": "invalid name", "expected_generation": 1, "timeout_seconds": 10}, True),
        ("expected generation zero", {"namespace_name": V, "barrier_name": V, "expected_generation": 0, "timeout_seconds": 10}, True),
        ("timeout seconds zero", {"namespace_name": V, "barrier_name": V, "expected_generation": 1, "timeout_seconds": 0}, False),
        ("timeout seconds negative", {"namespace_name": V, "barrier_name": V, "expected_generation": 1, "timeout_seconds": -1}, True),
        ("timeout seconds too high", {"namespace_name": V, "barrier_name": V, "expected_generation": 1, "timeout_seconds": 301}, True),
        ("valid request with maximum timeout", {"namespace_name": V, "barrier_name": V, "expected_generation": 1, "timeout_seconds": 300}, False),
    ],
    "ListBarrierParticipants": [
        ("empty request", {}, True),
        ("missing barrier name", {"namespace_name": V}, True),
        ("invalid pagination token (not base64)", {"namespace_name": V, "barrier_name": V, "pagination_token": "invalid-base64!@#"}, True),
        ("limit too high", {"namespace_name": V, "barrier_name": V, "limit": 251}, True),
        ("negative limit", {"namespace_name": V, "barrier_name": V, "limit": -1}, True),
        ("valid request with generation", {"namespace_name": V, "barrier_name": V, "generation": 1}, False),
    ],
}


def cases():
    out = []

    def case(name):
        def register(fn):
            out.append((name, fn))
            return fn
        return register

    for method, rows in VALIDATORS.items():
        for name, req, should_error in rows:
            def validator(c, method=method, req=req, should_error=should_error):
                try:
                    getattr(c, method)(**req)
                    check(not should_error, "succeeded, want INVALID_ARGUMENT")
                except grpc.RpcError as e:
                    if should_error:
                        eq(e.code(), C.INVALID_ARGUMENT, f"error ({e.details()})")
                    else:
                        check(e.code() != C.INVALID_ARGUMENT, f"INVALID_ARGUMENT for a valid request: {e.details()}")
            out.append((f"validators/{method}/{name}", validator))

    # ---- namespaces_test.go ----
    for method, req in [
        ("GetNamespace", {"namespace_name": "invalid@namespace"}),
        ("UpdateNamespace", {"namespace_name": "invalid@namespace", "description": "Updated description", "expected_version": 1}),
        ("DeleteNamespace", {"namespace_name": "invalid@namespace"}),
    ]:
        def validation(c, method=method, req=req):
            c.CreateNamespace(name="namespace1")
            r = getattr(c, method)(**{**req, "namespace_name": "namespace1"})
            if method != "DeleteNamespace":
                check(r.HasField("namespace"), "namespace in the answer")
            fails(lambda: getattr(c, method)(**req), C.INVALID_ARGUMENT, "invalid namespace name")
        out.append((f"namespaces/{method}/validation", validation))

    @case("namespaces/CreateNamespace/validation")
    def _(c):
        eq(c.CreateNamespace(name="namespace1", description="Test namespace").namespace.name, "namespace1", "name")
        fails(lambda: c.CreateNamespace(name="invalid@namespace"), C.INVALID_ARGUMENT, "invalid name")
        fails(lambda: c.CreateNamespace(name="namespace1"), C.ALREADY_EXISTS, "second create")

    @case("namespaces/ListNamespaces/validation")
    def _(c):
        c.ListNamespaces()

    @case("namespaces/ListNamespaces/pagination")
    def _(c):
        # Contract: every tenant has `default`, so 26 (Grackle's test has 25).
        names_all = ["default"] + [f"namespace_{i:03d}" for i in range(1, 26)]
        for i in range(1, 26):
            c.CreateNamespace(name=f"namespace_{i:03d}", description=f"Test namespace {i}")
        names = lambda r: [n.name for n in r.namespaces]
        r1 = c.ListNamespaces(limit=10)
        eq(names(r1), names_all[0:10], "page 1")
        check(r1.next_pagination_token and not r1.previous_pagination_token, "page 1 tokens")
        r2 = c.ListNamespaces(pagination_token=r1.next_pagination_token, limit=10)
        eq(names(r2), names_all[10:20], "page 2")
        check(r2.next_pagination_token and r2.previous_pagination_token, "page 2 tokens")
        r3 = c.ListNamespaces(pagination_token=r2.next_pagination_token, limit=10)
        eq(names(r3), names_all[20:], "page 3")
        check(not r3.next_pagination_token and r3.previous_pagination_token, "page 3 tokens")
        r4 = c.ListNamespaces(pagination_token=r3.previous_pagination_token, limit=10)
        eq(names(r4), names_all[10:20], "back to page 2")
        check(r4.next_pagination_token and r4.previous_pagination_token, "page 2 tokens, backwards")
        r5 = c.ListNamespaces(pagination_token=r4.previous_pagination_token, limit=10)
        eq(names(r5), names_all[0:10], "back to page 1")
        check(r5.next_pagination_token and not r5.previous_pagination_token, "page 1 tokens, backwards")
        r6 = c.ListNamespaces(limit=5)
        check(len(r6.namespaces) == 5 and r6.next_pagination_token, "limit 5")
        fails(lambda: c.ListNamespaces(pagination_token="invalid_token", limit=10), C.INVALID_ARGUMENT, "invalid token")
        r7 = c.ListNamespaces(limit=0)
        check(len(r7.namespaces) == 26 and not r7.next_pagination_token, "limit 0 is the default page")

    @case("namespaces/default has a real created_at")
    def _(c):
        d = c.GetNamespace(namespace_name="default").namespace
        check(d.created_at > 1_700_000_000_000_000_000, f"created_at {d.created_at}")

    # ---- barriers_test.go ----
    @case("barriers/ListBarriers/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        c.ListBarriers(namespace_name="namespace1")
        fails(lambda: c.ListBarriers(namespace_name="invalid@namespace"), C.INVALID_ARGUMENT, "invalid namespace")

    @case("barriers/ListBarriers/pagination")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        for i in range(1, 26):
            barrier(c, "test-namespace", f"barrier_{i:03d}", 3)
        page = lambda t: c.ListBarriers(namespace_name="test-namespace", pagination_token=t, limit=10)
        r1 = page("")
        check(len(r1.barriers) == 10 and r1.next_pagination_token and not r1.previous_pagination_token, "page 1")
        r2 = page(r1.next_pagination_token)
        check(len(r2.barriers) == 10 and r2.next_pagination_token and r2.previous_pagination_token, "page 2")
        r3 = page(r2.next_pagination_token)
        check(len(r3.barriers) == 5 and not r3.next_pagination_token and r3.previous_pagination_token, "page 3")
        eq(len({b.name for r in (r1, r2, r3) for b in r.barriers}), 25, "all 25")
        r4 = page(r3.previous_pagination_token)
        check(len(r4.barriers) == 10 and r4.next_pagination_token and r4.previous_pagination_token, "back")
        eq([b.name for b in r4.barriers], [b.name for b in r2.barriers], "back to page 2")

    @case("barriers/DeleteBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        c.DeleteBarrier(namespace_name="namespace1", barrier_name="barrier1")
        fails(lambda: c.DeleteBarrier(namespace_name="invalid@namespace", barrier_name="barrier1"), C.INVALID_ARGUMENT, "invalid namespace")

    @case("barriers/GetBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        barrier(c, "namespace1", "barrier1", 3)
        eq(c.GetBarrier(namespace_name="namespace1", barrier_name="barrier1").barrier.name, "barrier1", "name")
        fails(lambda: c.GetBarrier(namespace_name="invalid@namespace", barrier_name="barrier1"), C.INVALID_ARGUMENT, "invalid namespace")

    @case("barriers/CreateBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        eq(barrier(c, "namespace1", "barrier1", 3).name, "barrier1", "name")
        fails(lambda: barrier(c, "invalid@namespace", "barrier2", 3), C.INVALID_ARGUMENT, "invalid namespace")
        fails(lambda: barrier(c, "namespace1", "barrier3", 0), C.INVALID_ARGUMENT, "zero expected", "expected_processes must be greater than 0")

    update = dict(namespace_name="namespace1", barrier_name="barrier1", description="Updated description",
                  expected_processes=5, expected_version=1, delete_inactive_after_seconds=TEN_MIN)

    @case("barriers/UpdateBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        b = barrier(c, "namespace1", "barrier1", 3, description="Original description")
        eq((b.description, b.expected_processes), ("Original description", 3), "created")
        r = c.UpdateBarrier(**update)
        eq((r.barrier.description, r.barrier.expected_processes), ("Updated description", 5), "updated")
        fails(lambda: c.UpdateBarrier(**{**update, "namespace_name": "invalid@namespace"}), C.INVALID_ARGUMENT, "invalid namespace")
        fails(lambda: c.UpdateBarrier(**{**update, "expected_processes": 0}), C.INVALID_ARGUMENT, "zero expected")

    @case("barriers/UpdateBarrier/update successfully")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        b = barrier(c, "test-namespace", "test-barrier", 3, description="Original description")
        time.sleep(0.01)
        r = c.UpdateBarrier(namespace_name="test-namespace", barrier_name="test-barrier", description="Updated description",
                            expected_processes=10, expected_version=1, delete_inactive_after_seconds=TEN_MIN)
        eq((r.barrier.name, r.barrier.description, r.barrier.expected_processes), ("test-barrier", "Updated description", 10), "updated")
        eq(r.barrier.created_at, b.created_at, "created_at unchanged")
        check(r.barrier.updated_at > b.updated_at, "updated_at moved")
        g = c.GetBarrier(namespace_name="test-namespace", barrier_name="test-barrier").barrier
        eq((g.description, g.expected_processes), ("Updated description", 10), "kept")

    @case("barriers/UpdateBarrier/cannot reduce expected_processes below arrived_processes")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        barrier(c, "test-namespace", "test-barrier", 5)
        for i in range(3):
            arrive(c, "test-namespace", "test-barrier", f"process-{i}", 1)
        u = dict(namespace_name="test-namespace", barrier_name="test-barrier", description="Updated",
                 expected_version=1, delete_inactive_after_seconds=TEN_MIN)
        fails(lambda: c.UpdateBarrier(**u, expected_processes=2), C.INVALID_ARGUMENT, "below arrived", "is below arrived_processes 3")
        r = c.UpdateBarrier(**u, expected_processes=3)
        eq((r.barrier.expected_processes, r.barrier.generation, r.barrier.arrived_processes), (3, 2, 0), "equal trips")
        r2 = c.UpdateBarrier(**{**u, "description": "Updated again", "expected_version": 2}, expected_processes=10)
        eq(r2.barrier.expected_processes, 10, "raised")

    @case("barriers/UpdateBarrier/update nonexistent barrier")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        fails(lambda: c.UpdateBarrier(namespace_name="test-namespace", barrier_name="nonexistent-barrier", description="desc",
                                      expected_processes=5, expected_version=1, delete_inactive_after_seconds=TEN_MIN),
              C.NOT_FOUND, "missing", "barrier not found")

    @case("barriers/ArriveAtBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        barrier(c, "namespace1", "barrier1", 3)
        arrive(c, "namespace1", "barrier1", "proc1", 1)
        fails(lambda: arrive(c, "invalid@namespace", "barrier1", "proc2", 1), C.INVALID_ARGUMENT, "invalid namespace")
        fails(lambda: arrive(c, "namespace1", "barrier1", "proc3", 0), C.INVALID_ARGUMENT, "generation zero")

    @case("barriers/ListBarrierParticipants/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        barrier(c, "namespace1", "barrier1", 3)
        c.ListBarrierParticipants(namespace_name="namespace1", barrier_name="barrier1", generation=1)
        fails(lambda: c.ListBarrierParticipants(namespace_name="invalid@namespace", barrier_name="barrier1", generation=1),
              C.INVALID_ARGUMENT, "invalid namespace")

    @case("barriers/ListBarrierParticipants/pagination")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        barrier(c, "test-namespace", "test-barrier", 25)
        for i in range(1, 26):
            arrive(c, "test-namespace", "test-barrier", f"process_{i:03d}", 1)
        page = lambda t: c.ListBarrierParticipants(namespace_name="test-namespace", barrier_name="test-barrier",
                                                   generation=1, pagination_token=t, limit=10)
        r1 = page("")
        check(len(r1.participants) == 10 and r1.next_pagination_token and not r1.previous_pagination_token, "page 1")
        r2 = page(r1.next_pagination_token)
        check(len(r2.participants) == 10 and r2.next_pagination_token and r2.previous_pagination_token, "page 2")
        r3 = page(r2.next_pagination_token)
        check(len(r3.participants) == 5 and not r3.next_pagination_token and r3.previous_pagination_token, "page 3")
        r4 = page(r3.previous_pagination_token)
        check(len(r4.participants) == 10 and r4.next_pagination_token and r4.previous_pagination_token, "back")
        eq([p.process_id for p in r4.participants], [p.process_id for p in r2.participants], "back to page 2")

    @case("barriers/WaitAtBarrier/validation")
    def _(c):
        c.CreateNamespace(name="namespace1")
        barrier(c, "namespace1", "barrier1", 3)
        w = dict(namespace_name="namespace1", barrier_name="barrier1", expected_generation=1, timeout_seconds=1)
        c.WaitAtBarrier(**w)
        fails(lambda: c.WaitAtBarrier(**{**w, "namespace_name": "invalid@namespace"}), C.INVALID_ARGUMENT, "invalid namespace")
        fails(lambda: c.WaitAtBarrier(**{**w, "expected_generation": 0}), C.INVALID_ARGUMENT, "generation zero")
        fails(lambda: c.WaitAtBarrier(**{**w, "timeout_seconds": 301}), C.INVALID_ARGUMENT, "timeout too high")

    @case("barriers/WaitAtBarrier/completion")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        barrier(c, "test-namespace", "test-barrier", 3)

        def arrivals():
            for p in ("proc1", "proc2", "proc3"):
                time.sleep(0.03)
                arrive(c, "test-namespace", "test-barrier", p, 1)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            done = pool.submit(arrivals)
            r = c.WaitAtBarrier(namespace_name="test-namespace", barrier_name="test-barrier", expected_generation=1, timeout_seconds=1)
            done.result()
        eq(r.outcome, TRIPPED, "outcome")
        eq((r.barrier.expected_processes, r.barrier.arrived_processes, r.barrier.generation), (3, 0, 2), "tripped barrier")

    @case("barriers/WaitAtBarrier/timeout")
    def _(c):
        c.CreateNamespace(name="test-namespace")
        barrier(c, "test-namespace", "test-barrier-timeout", 5)
        arrive(c, "test-namespace", "test-barrier-timeout", "p1", 1)
        arrive(c, "test-namespace", "test-barrier-timeout", "p2", 1)
        r = c.WaitAtBarrier(namespace_name="test-namespace", barrier_name="test-barrier-timeout", expected_generation=1, timeout_seconds=1)
        eq(r.outcome, TIMED_OUT, "outcome")
        eq((r.barrier.expected_processes, r.barrier.arrived_processes), (5, 2), "unchanged")

    # ---- core_test.go, the cases an API client can drive ----
    @case("core/create/duplicate name")
    def _(c):
        barrier(c, "default", "test_barrier", 3)
        fails(lambda: barrier(c, "default", "test_barrier", 3), C.ALREADY_EXISTS, "second create")

    @case("core/get/nonexistent barrier")
    def _(c):
        fails(lambda: c.GetBarrier(namespace_name="default", barrier_name="nope"), C.NOT_FOUND, "missing", "barrier not found")

    @case("core/list/empty and multiple namespaces")
    def _(c):
        c.CreateNamespace(name="ns1")
        c.CreateNamespace(name="ns2")
        eq(len(c.ListBarriers(namespace_name="ns1").barriers), 0, "empty")
        for i in range(3):
            barrier(c, "ns1", f"barrier_ns1_{i}", 3)
        for i in range(2):
            barrier(c, "ns2", f"barrier_ns2_{i}", 5)
        eq(len(c.ListBarriers(namespace_name="ns1").barriers), 3, "ns1")
        eq(len(c.ListBarriers(namespace_name="ns2").barriers), 2, "ns2")

    @case("core/delete/existing, nonexistent, and the name again")
    def _(c):
        barrier(c, "default", "test_barrier", 3)
        c.DeleteBarrier(namespace_name="default", barrier_name="test_barrier")
        fails(lambda: c.GetBarrier(namespace_name="default", barrier_name="test_barrier"), C.NOT_FOUND, "deleted", "barrier not found")
        c.DeleteBarrier(namespace_name="default", barrier_name="nonexistent_barrier")
        eq(barrier(c, "default", "test_barrier", 3).generation, 1, "created again")

    @case("core/update/versions: increments, stale, future")
    def _(c):
        barrier(c, "default", "b", 3)
        u = lambda v, n: c.UpdateBarrier(namespace_name="default", barrier_name="b", expected_processes=n,
                                         expected_version=v, delete_inactive_after_seconds=TEN_MIN)
        eq(u(1, 4).barrier.version, 2, "v2")
        eq(u(2, 5).barrier.version, 3, "v3")
        fails(lambda: u(1, 6), C.FAILED_PRECONDITION, "stale version", "expected_version 1")
        fails(lambda: u(9, 6), C.FAILED_PRECONDITION, "future version", "expected_version 9")

    @case("core/update/shrinking expected_processes to arrived trips")
    def _(c):
        barrier(c, "default", "b", 4)
        arrive(c, "default", "b", "p1", 1)
        arrive(c, "default", "b", "p2", 1)
        r = c.UpdateBarrier(namespace_name="default", barrier_name="b", expected_processes=2, expected_version=1,
                            delete_inactive_after_seconds=TEN_MIN)
        eq((r.barrier.generation, r.barrier.arrived_processes), (2, 0), "tripped")

    @case("core/arrive/multiple, twice, nonexistent, auto trip")
    def _(c):
        barrier(c, "default", "b", 3)
        a1 = arrive(c, "default", "b", "p1", 1)
        eq((a1.barrier.arrived_processes, a1.all_arrived), (1, False), "first")
        again = arrive(c, "default", "b", "p1", 1)
        eq((again.barrier.arrived_processes, again.all_arrived), (1, False), "repeat is a no-op")
        arrive(c, "default", "b", "p2", 1)
        last = arrive(c, "default", "b", "p3", 1)
        eq((last.all_arrived, last.barrier.generation, last.barrier.arrived_processes), (True, 2, 0), "auto trip")
        fails(lambda: arrive(c, "default", "nope", "p1", 1), C.NOT_FOUND, "missing barrier", "barrier not found")

    @case("core/arrive/single expected process and old generation")
    def _(c):
        barrier(c, "default", "solo", 1)
        a = arrive(c, "default", "solo", "p1", 1)
        eq((a.all_arrived, a.barrier.generation), (True, 2), "trips at once")
        retry = arrive(c, "default", "solo", "p1", 1)
        eq((retry.all_arrived, retry.barrier.generation), (True, 2), "retry after the trip")
        fails(lambda: arrive(c, "default", "solo", "p2", 1), C.FAILED_PRECONDITION, "old generation", "current generation 2")

    @case("core/metadata on barriers and participants")
    def _(c):
        b = barrier(c, "default", "m", 2, metadata={"team": "search", "env": "prod"})
        eq(dict(b.metadata), {"env": "prod", "team": "search"}, "create")
        arrive(c, "default", "m", "p1", 1, {"host": "a"})
        l = c.ListBarrierParticipants(namespace_name="default", barrier_name="m")
        eq([(p.process_id, dict(p.metadata)) for p in l.participants], [("p1", {"host": "a"})], "participant metadata")
        u = c.UpdateBarrier(namespace_name="default", barrier_name="m", expected_processes=2, expected_version=1,
                            delete_inactive_after_seconds=TEN_MIN)
        eq(dict(u.barrier.metadata), {}, "update replaces metadata")
        fails(lambda: barrier(c, "default", "m2", 2, metadata={"": "v"}), C.INVALID_ARGUMENT, "empty key")

    @case("core/participants/empty and nonexistent barrier")
    def _(c):
        barrier(c, "default", "e", 2)
        eq(len(c.ListBarrierParticipants(namespace_name="default", barrier_name="e", generation=1).participants), 0, "empty")
        fails(lambda: c.ListBarrierParticipants(namespace_name="default", barrier_name="nope"), C.NOT_FOUND, "missing")

    @case("core/last_activity_at: create sets it, arrive moves it, update does not")
    def _(c):
        b = barrier(c, "default", "act", 3)
        eq(b.last_activity_at, b.created_at, "at create")
        time.sleep(0.005)
        a = arrive(c, "default", "act", "p1", 1)
        check(a.barrier.last_activity_at > b.last_activity_at, "arrive moved it")
        u = c.UpdateBarrier(namespace_name="default", barrier_name="act", expected_processes=4, expected_version=1,
                            delete_inactive_after_seconds=TEN_MIN)
        eq(u.barrier.last_activity_at, a.barrier.last_activity_at, "update left it")

    @case("core/deleteNamespace takes its barriers")
    def _(c):
        c.CreateNamespace(name="gone")
        barrier(c, "gone", "b", 2)
        c.DeleteNamespace(namespace_name="gone")
        fails(lambda: c.GetBarrier(namespace_name="gone", barrier_name="b"), C.NOT_FOUND, "namespace gone", "namespace not found")
        c.CreateNamespace(name="gone")
        fails(lambda: c.GetBarrier(namespace_name="gone", barrier_name="b"), C.NOT_FOUND, "created again, empty", "barrier not found")

    # ---- seed 003's example workflow ----
    @case("seed 003/example workflow")
    def _(c):
        c.CreateNamespace(name="pipelines")
        b = c.CreateBarrier(namespace_name="pipelines", barrier_name="phase_1_complete", description="End of map phase",
                            expected_processes=4, delete_inactive_after_seconds=3600).barrier
        eq((b.name, b.description, b.expected_processes, b.arrived_processes, b.generation, b.version, b.delete_inactive_after_seconds),
           ("phase_1_complete", "End of map phase", 4, 0, 1, 1, 3600), "created")
        check(b.created_at == b.updated_at == b.last_activity_at > 1_700_000_000_000_000_000, "timestamps")
        a0 = arrive(c, "pipelines", "phase_1_complete", "shard-0", 1)
        eq((a0.barrier.arrived_processes, a0.barrier.generation, a0.all_arrived), (1, 1, False), "shard-0")
        eq(arrive(c, "pipelines", "phase_1_complete", "shard-0", 1).barrier.arrived_processes, 1, "retry is a no-op")
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiter = pool.submit(lambda: c.WaitAtBarrier(namespace_name="pipelines", barrier_name="phase_1_complete",
                                                         expected_generation=1, timeout_seconds=300))
            time.sleep(0.05)
            for s in ("shard-1", "shard-2", "shard-3"):
                arrive(c, "pipelines", "phase_1_complete", s, 1)
            w = waiter.result()
        eq((w.outcome, w.barrier.generation, w.barrier.arrived_processes), (TRIPPED, 2, 0), "released")
        for s in ("shard-0", "shard-1", "shard-2"):
            arrive(c, "pipelines", "phase_1_complete", s, 2)
        t = c.WaitAtBarrier(namespace_name="pipelines", barrier_name="phase_1_complete", expected_generation=2, timeout_seconds=1)
        eq((t.outcome, t.barrier.generation, t.barrier.arrived_processes), (TIMED_OUT, 2, 3), "timed out")
        g = c.GetBarrier(namespace_name="pipelines", barrier_name="phase_1_complete").barrier
        eq((g.generation, g.arrived_processes), (2, 3), "inspected")
        l = c.ListBarrierParticipants(namespace_name="pipelines", barrier_name="phase_1_complete", generation=1)
        eq([p.process_id for p in l.participants], ["shard-0", "shard-1", "shard-2", "shard-3"], "generation 1's participants")
        c.DeleteBarrier(namespace_name="pipelines", barrier_name="phase_1_complete")
        fails(lambda: c.GetBarrier(namespace_name="pipelines", barrier_name="phase_1_complete"), C.NOT_FOUND, "deleted")

    # ---- the caller's deadline ----
    @case("deadline/ends a WaitAtBarrier before its timeout_seconds")
    def _(c):
        barrier(c, "default", "slow", 2)
        t0 = time.monotonic()
        fails(lambda: c.WaitAtBarrier(namespace_name="default", barrier_name="slow", expected_generation=1,
                                      timeout_seconds=30, timeout=0.7), C.DEADLINE_EXCEEDED, "deadline")
        check(time.monotonic() - t0 < 5, f"took {time.monotonic() - t0:.1f} s")

    @case("auth/a wrong key is UNAUTHENTICATED")
    def _(c):
        bad = Client(CHANNEL, "nk_0000000000000000_wrong")
        fails(lambda: bad.ListNamespaces(), C.UNAUTHENTICATED, "wrong key")

    return out


CHANNEL = None


def main():
    global CHANNEL
    addr, key = sys.argv[1], sys.argv[2]
    CHANNEL = grpc.insecure_channel(addr)
    c = Client(CHANNEL, key)
    passed, failures = 0, []
    for name, fn in cases():
        try:
            reset(c)
            fn(c)
            passed += 1
        except Failure as e:
            failures.append(f"{name}: {e}")
        except grpc.RpcError as e:
            failures.append(f"{name}: {e.code()} {e.details()}")
    print(f"grpc-python-h2: {passed} passed, {len(failures)} failed")
    for f in failures:
        print(f"  FAILED {f}")
    print("RESULT " + json.dumps({"transport": "grpc-python-h2", "passed": passed, "failed": len(failures), "failures": failures}))


if __name__ == "__main__":
    main()

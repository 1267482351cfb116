// Runs Grackle's cases (cases.mjs) against `native serve` with the Connect-ES client generated
// from the shipped proto, over every transport Connect-ES has: Connect JSON and binary over
// HTTP/1.1, Connect binary over HTTP/2, gRPC over HTTP/2 and gRPC-Web over HTTP/1.1; then the
// checks that are about the wire rather than the API.
//
//   node run.mjs http://127.0.0.1:PORT '{"connect-json-h1": "nk_...", ...}'
//
// Prints one `RESULT {json}` line per transport and per check, which cli/tests/clients.rs reads.

import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { GrackleApi } from "./gen/grackle-v1beta_pb.js";
import { cases, reset, Failure } from "./cases.mjs";

const [baseUrl, keysJson] = process.argv.slice(2);
const keys = JSON.parse(keysJson);

const auth = (key) => (next) => async (req) => {
  req.header.set("authorization", `Bearer ${key}`);
  return next(req);
};

const transports = {
  "connect-json-h1": (i) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, interceptors: i }),
  "connect-proto-h1": (i) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true, interceptors: i }),
  "connect-proto-h2": (i) => createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, interceptors: i }),
  "grpc-h2": (i) => createGrpcTransport({ baseUrl, interceptors: i }),
  "grpc-web-h1": (i) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors: i }),
};

const client = (name, key) => createClient(GrackleApi, transports[name]([auth(key)]));

function result(name, passed, failures) {
  console.log(`${name}: ${passed} passed, ${failures.length} failed`);
  for (const f of failures) console.log(`  FAILED ${f}`);
  console.log(`RESULT ${JSON.stringify({ transport: name, passed, failed: failures.length, failures })}`);
}

async function runTransport(name) {
  const c = client(name, keys[name]);
  let passed = 0;
  const failures = [];
  for (const { name: caseName, fn } of cases()) {
    try {
      await reset(c);
      await fn(c);
      passed++;
    } catch (e) {
      const why = e instanceof Failure ? e.message : `${e?.constructor?.name}: ${e?.message}`;
      failures.push(`${caseName}: ${why}`);
    }
  }
  result(name, passed, failures);
}

// A refused key with a 2 KB body over HTTP/1.1 reaches the client as `unauthenticated`, not as
// a broken pipe or a reset (the server answers before it needs the body).
async function refusedKeys() {
  const real = keys["connect-json-h1"];
  const wrongSecret = real.slice(0, -4) + (real.endsWith("aaaa") ? "bbbb" : "aaaa");
  const bodyOf2k = { namespaceName: "default", barrierName: "b", description: "d".repeat(1000), expectedProcesses: 2n, deleteInactiveAfterSeconds: 600n, metadata: { k: "v".repeat(250), l: "w".repeat(250), m: "x".repeat(250), n: "y".repeat(250) } };
  for (const [form, name] of [["json", "connect-json-h1"], ["proto", "connect-proto-h1"]]) {
    for (const [what, key] of [["malformed key", "not-a-key"], ["wrong secret", wrongSecret]]) {
      const c = client(name, key);
      let got = 0;
      const others = {};
      for (let i = 0; i < 100; i++) {
        try {
          await c.createBarrier(bodyOf2k);
          others.succeeded = (others.succeeded ?? 0) + 1;
        } catch (e) {
          const ce = ConnectError.from(e);
          if (ce.code === Code.Unauthenticated) got++;
          else others[ce.rawMessage] = (others[ce.rawMessage] ?? 0) + 1;
        }
      }
      const failures = got === 100 ? [] : [`${100 - got} of 100 not unauthenticated: ${JSON.stringify(others)}`];
      result(`unauthenticated ${form} h1 (${what}), 2 KB body`, got, failures);
    }
  }
}

// int64 keeps its precision for a JavaScript client: the JSON form (int64 as strings) and the
// binary form answer the same created_at, to the nanosecond.
async function int64Precision() {
  const json = client("connect-json-h1", keys["connect-json-h1"]);
  const bin = client("connect-proto-h1", keys["connect-json-h1"]);
  await reset(json);
  const failures = [];
  let passed = 0;
  for (let i = 0; i < 40; i++) {
    const b = (await bin.createBarrier({ namespaceName: "default", barrierName: `p${i}`, expectedProcesses: 2n, deleteInactiveAfterSeconds: 600n })).barrier;
    const j = (await json.getBarrier({ namespaceName: "default", barrierName: `p${i}` })).barrier;
    if (j.createdAt === b.createdAt && typeof j.createdAt === "bigint") passed++;
    else failures.push(`p${i}: JSON ${j.createdAt}, binary ${b.createdAt}`);
  }
  await reset(json);
  result("int64 precision, JSON vs binary", passed, failures);
}

await Promise.all(Object.keys(transports).map(runTransport));
await refusedKeys();
await int64Precision();

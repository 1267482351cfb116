// Grackle's own barrier and namespace test cases, ported to a client generated from the shipped
// proto (shared/proto/grackle-v1beta.proto): evrblk/grackle's
// pkg/server/v1beta/integration_test (barriers_test.go, namespaces_test.go),
// pkg/barriers/core_test.go (the cases an API client can drive), validators_test.go (the
// barrier and namespace tables), and seed 003's example workflow. Where Grackle and native's
// contract (docs/rendezvous.md) differ, the contract wins; each such place says so.
//
// Each case starts from a tenant with only the `default` namespace, empty (as Grackle's start
// from a new server). tests/clients/grpc_client.py holds the same cases for Python's grpcio.

import { ConnectError, Code } from "@connectrpc/connect";
import { BarrierWaitOutcome } from "./gen/grackle-v1beta_pb.js";

const TEN_MIN = 600n;

export class Failure extends Error {}

function check(cond, what) {
  if (!cond) throw new Failure(what);
}

const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x)) ?? String(v);

function eq(got, want, what) {
  const g = show(got);
  const w = show(want);
  if (g !== w) throw new Failure(`${what}: got ${g}, want ${w}`);
}

/** The call fails with `code` (and a message containing `contains`, when given). */
async function fails(p, code, what, contains) {
  try {
    await p;
  } catch (e) {
    const ce = ConnectError.from(e);
    eq(Code[ce.code], Code[code], `${what} (${ce.rawMessage})`);
    if (contains) check(ce.rawMessage.includes(contains), `${what}: message ${JSON.stringify(ce.rawMessage)} lacks ${JSON.stringify(contains)}`);
    return ce;
  }
  throw new Failure(`${what}: succeeded, want ${Code[code]}`);
}

const pad = (i) => String(i).padStart(3, "0");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Deletes every namespace but default, and every barrier of default. */
export async function reset(c) {
  for (;;) {
    const l = await c.listNamespaces({ limit: 250 });
    const others = l.namespaces.filter((n) => n.name !== "default");
    for (const n of others) await c.deleteNamespace({ namespaceName: n.name });
    if (others.length === 0) break;
  }
  for (;;) {
    const l = await c.listBarriers({ namespaceName: "default", limit: 250 });
    for (const b of l.barriers) await c.deleteBarrier({ namespaceName: "default", barrierName: b.name });
    if (l.barriers.length === 0) break;
  }
}

async function ns(c, name) {
  await c.createNamespace({ name });
}

async function barrier(c, namespaceName, barrierName, expectedProcesses, extra = {}) {
  return (
    await c.createBarrier({
      namespaceName,
      barrierName,
      expectedProcesses: BigInt(expectedProcesses),
      deleteInactiveAfterSeconds: TEN_MIN,
      ...extra,
    })
  ).barrier;
}

async function arrive(c, namespaceName, barrierName, processId, expectedGeneration, metadata = {}) {
  return c.arriveAtBarrier({ namespaceName, barrierName, processId, expectedGeneration: BigInt(expectedGeneration), metadata });
}

const nul = (n) => "\0".repeat(n);

// ---- validators_test.go: each row a case; shouldError rows must be invalid_argument, the
// others must not be (they may be not_found: "validname" does not exist). ----
function validatorRows() {
  const V = "validname";
  const ok = [];
  const rows = (method, table) => table.map(([name, req, shouldError]) => ({ name: `validators/${method}/${name}`, method, req, shouldError }));
  ok.push(
    ...rows("createNamespace", [
      ["empty request", {}, true],
      ["empty name", { name: "" }, true],
      ["name too long", { name: nul(129) }, true],
      ["invalid name characters", { name: "invalid name" }, true],
      ["description too long", { name: V, description: nul(1025) }, true],
      ["valid request", { name: V, description: "Valid description" }, false],
    ]),
    ...rows("getNamespace", [
      ["empty request", {}, true],
      ["namespace name too long", { namespaceName: nul(129) }, true],
      ["invalid namespace name characters", { namespaceName: "invalid name" }, true],
      ["valid request", { namespaceName: V }, false],
    ]),
    // Contract: namespaces are not versioned, so expected_version is not checked (Grackle
    // refuses 0 and -1); those two rows are left out.
    ...rows("updateNamespace", [
      ["empty request", {}, true],
      ["namespace name too long", { namespaceName: nul(129), expectedVersion: 1n }, true],
      ["invalid namespace name characters", { namespaceName: "invalid name", expectedVersion: 1n }, true],
      ["description too long", { namespaceName: V, description: nul(1025), expectedVersion: 1n }, true],
      ["valid request", { namespaceName: V, description: "Valid description", expectedVersion: 1n }, false],
    ]),
    ...rows("deleteNamespace", [
      ["empty request", {}, true],
      ["namespace name too long", { namespaceName: nul(129) }, true],
      ["invalid namespace name characters", { namespaceName: "invalid name" }, true],
      ["valid request", { namespaceName: V }, false],
    ]),
    // Contract: a pagination token is one this API handed out; "dGVzdA==" is not, and is
    // refused here as Grackle's handler refuses it when it decodes it.
    ...rows("listNamespaces", [
      ["empty request", {}, false],
      ["pagination token too long", { paginationToken: nul(1025), limit: 50 }, true],
      ["limit too high", { limit: 251 }, true],
      ["negative limit", { limit: -1 }, true],
      ["edge case: limit at maximum", { limit: 250 }, false],
      ["edge case: pagination token at maximum length", { paginationToken: nul(1024), limit: 50 }, true],
      ["valid request", { limit: 50 }, false],
      ["made-up pagination token", { paginationToken: "dGVzdA==" }, true],
    ]),
    ...rows("createBarrier", [
      ["empty request", {}, true],
      ["missing namespace name", { barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["missing barrier name", { namespaceName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["invalid namespace name characters", { namespaceName: "invalid name", barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["invalid barrier name characters", { namespaceName: V, barrierName: "invalid name", expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["namespace name too long", { namespaceName: nul(129), barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["barrier name too long", { namespaceName: V, barrierName: nul(129), expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["description too long", { namespaceName: V, barrierName: V, description: nul(1025), expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, true],
      ["expected processes zero", { namespaceName: V, barrierName: V, expectedProcesses: 0n, deleteInactiveAfterSeconds: 3600n }, true],
      ["delete inactive after seconds zero", { namespaceName: V, barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 0n }, true],
      ["delete inactive after seconds negative", { namespaceName: V, barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: -1n }, true],
      ["valid request", { namespaceName: V, barrierName: V, expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, false],
      ["valid request with description", { namespaceName: V, barrierName: V, description: "Valid description", expectedProcesses: 3n, deleteInactiveAfterSeconds: 3600n }, false],
    ]),
    ...rows("listBarriers", [
      ["empty request", {}, true],
      ["invalid namespace name characters", { namespaceName: "invalid name" }, true],
      ["namespace name too long", { namespaceName: nul(129) }, true],
      ["invalid pagination token (not base64)", { namespaceName: V, paginationToken: "invalid-base64!@#" }, true],
      ["pagination token too long", { namespaceName: V, paginationToken: nul(1025) }, true],
      ["limit too high", { namespaceName: V, limit: 251 }, true],
      ["negative limit", { namespaceName: V, limit: -1 }, true],
      ["valid request", { namespaceName: V }, false],
    ]),
    ...rows("getBarrier", [
      ["empty request", {}, true],
      ["missing namespace name", { barrierName: V }, true],
      ["missing barrier name", { namespaceName: V }, true],
      ["invalid namespace name characters", { namespaceName: "invalid name", barrierName: V }, true],
      ["invalid barrier name characters", { namespaceName: V, barrierName: "invalid name" }, true],
      ["namespace name too long", { namespaceName: nul(129), barrierName: V }, true],
      ["barrier name too long", { namespaceName: V, barrierName: nul(129) }, true],
      ["valid request", { namespaceName: V, barrierName: V }, false],
    ]),
    ...rows("deleteBarrier", [
      ["empty request", {}, true],
      ["missing namespace name", { barrierName: V }, true],
      ["missing barrier name", { namespaceName: V }, true],
      ["invalid barrier name characters", { namespaceName: V, barrierName: "invalid name" }, true],
      ["barrier name too long", { namespaceName: V, barrierName: nul(129) }, true],
      ["valid request", { namespaceName: V, barrierName: V }, false],
    ]),
    ...rows("updateBarrier", [
      ["empty request", {}, true],
      ["missing barrier name", { namespaceName: V, description: "desc", expectedProcesses: 3n, expectedVersion: 1n, deleteInactiveAfterSeconds: 3600n }, true],
      ["invalid barrier name characters", { namespaceName: V, barrierName: "invalid name", expectedProcesses: 3n, expectedVersion: 1n, deleteInactiveAfterSeconds: 3600n }, true],
      ["description too long", { namespaceName: V, barrierName: V, description: nul(1025), expectedProcesses: 3n, expectedVersion: 1n, deleteInactiveAfterSeconds: 3600n }, true],
      ["expected_processes zero", { namespaceName: V, barrierName: V, expectedProcesses: 0n, expectedVersion: 1n, deleteInactiveAfterSeconds: 3600n }, true],
      ["delete inactive after seconds zero", { namespaceName: V, barrierName: V, expectedProcesses: 3n, expectedVersion: 1n }, true],
      ["zero expected version", { namespaceName: V, barrierName: V, expectedProcesses: 5n, deleteInactiveAfterSeconds: 3600n }, true],
      ["valid request", { namespaceName: V, barrierName: V, description: "Valid description", expectedProcesses: 5n, expectedVersion: 1n, deleteInactiveAfterSeconds: 3600n }, false],
    ]),
    ...rows("arriveAtBarrier", [
      ["empty request", {}, true],
      ["missing process id", { namespaceName: V, barrierName: V, expectedGeneration: 1n }, true],
      ["invalid process id characters", { namespaceName: V, barrierName: V, processId: "invalid process id", expectedGeneration: 1n }, true],
      ["process id too long", { namespaceName: V, barrierName: V, processId: nul(129), expectedGeneration: 1n }, true],
      ["expected generation zero", { namespaceName: V, barrierName: V, processId: "proc1", expectedGeneration: 0n }, true],
      ["valid request", { namespaceName: V, barrierName: V, processId: "proc1", expectedGeneration: 1n }, false],
    ]),
    ...rows("waitAtBarrier", [
      ["empty request", {}, true],
      ["invalid barrier name characters", { namespaceName: V, barrierName: "invalid name", expectedGeneration: 1n, timeoutSeconds: 10 }, true],
      ["expected generation zero", { namespaceName: V, barrierName: V, expectedGeneration: 0n, timeoutSeconds: 10 }, true],
      ["timeout seconds zero", { namespaceName: V, barrierName: V, expectedGeneration: 1n, timeoutSeconds: 0 }, false],
      ["timeout seconds negative", { namespaceName: V, barrierName: V, expectedGeneration: 1n, timeoutSeconds: -1 }, true],
      ["timeout seconds too high", { namespaceName: V, barrierName: V, expectedGeneration: 1n, timeoutSeconds: 301 }, true],
      ["valid request with maximum timeout", { namespaceName: V, barrierName: V, expectedGeneration: 1n, timeoutSeconds: 300 }, false],
    ]),
    ...rows("listBarrierParticipants", [
      ["empty request", {}, true],
      ["missing barrier name", { namespaceName: V }, true],
      ["invalid pagination token (not base64)", { namespaceName: V, barrierName: V, paginationToken: "invalid-base64!@#" }, true],
      ["limit too high", { namespaceName: V, barrierName: V, limit: 251 }, true],
      ["negative limit", { namespaceName: V, barrierName: V, limit: -1 }, true],
      ["valid request with generation", { namespaceName: V, barrierName: V, generation: 1n }, false],
    ]),
  );
  return ok;
}

export function cases() {
  const list = [];
  const add = (name, fn) => list.push({ name, fn });

  for (const row of validatorRows()) {
    add(row.name, async (c) => {
      try {
        await c[row.method](row.req);
        check(!row.shouldError, "succeeded, want invalid_argument");
      } catch (e) {
        if (e instanceof Failure) throw e;
        const ce = ConnectError.from(e);
        if (row.shouldError) eq(Code[ce.code], "InvalidArgument", `error (${ce.rawMessage})`);
        else check(ce.code !== Code.InvalidArgument, `invalid_argument for a valid request: ${ce.rawMessage}`);
      }
    });
  }

  // ---- namespaces_test.go ----
  for (const [method, req] of [
    ["getNamespace", { namespaceName: "invalid@namespace" }],
    ["updateNamespace", { namespaceName: "invalid@namespace", description: "Updated description", expectedVersion: 1n }],
    ["deleteNamespace", { namespaceName: "invalid@namespace" }],
  ]) {
    add(`namespaces/${method}/validation`, async (c) => {
      await ns(c, "namespace1");
      const good = { ...req, namespaceName: "namespace1" };
      const r = await c[method](good);
      if (method !== "deleteNamespace") check(r.namespace !== undefined, "namespace in the answer");
      await fails(c[method](req), Code.InvalidArgument, "invalid namespace name");
    });
  }
  add("namespaces/createNamespace/validation", async (c) => {
    const r = await c.createNamespace({ name: "namespace1", description: "Test namespace" });
    eq(r.namespace.name, "namespace1", "name");
    await fails(c.createNamespace({ name: "invalid@namespace" }), Code.InvalidArgument, "invalid name");
    await fails(c.createNamespace({ name: "namespace1" }), Code.AlreadyExists, "second create");
  });
  add("namespaces/listNamespaces/validation", async (c) => {
    const r = await c.listNamespaces({});
    check(Array.isArray(r.namespaces), "namespaces");
  });
  add("namespaces/listNamespaces/pagination", async (c) => {
    // Contract: every tenant has `default`, so there are 26 (Grackle's test has 25).
    const all = ["default"];
    for (let i = 1; i <= 25; i++) {
      all.push(`namespace_${pad(i)}`);
      await c.createNamespace({ name: `namespace_${pad(i)}`, description: `Test namespace ${i}` });
    }
    const names = (r) => r.namespaces.map((n) => n.name);
    const r1 = await c.listNamespaces({ limit: 10 });
    eq(names(r1), all.slice(0, 10), "page 1");
    check(r1.nextPaginationToken !== "" && r1.previousPaginationToken === "", "page 1 tokens");
    const r2 = await c.listNamespaces({ paginationToken: r1.nextPaginationToken, limit: 10 });
    eq(names(r2), all.slice(10, 20), "page 2");
    check(r2.nextPaginationToken !== "" && r2.previousPaginationToken !== "", "page 2 tokens");
    const r3 = await c.listNamespaces({ paginationToken: r2.nextPaginationToken, limit: 10 });
    eq(names(r3), all.slice(20), "page 3");
    check(r3.nextPaginationToken === "" && r3.previousPaginationToken !== "", "page 3 tokens");
    const r4 = await c.listNamespaces({ paginationToken: r3.previousPaginationToken, limit: 10 });
    eq(names(r4), all.slice(10, 20), "back to page 2");
    check(r4.nextPaginationToken !== "" && r4.previousPaginationToken !== "", "page 2 tokens, backwards");
    const r5 = await c.listNamespaces({ paginationToken: r4.previousPaginationToken, limit: 10 });
    eq(names(r5), all.slice(0, 10), "back to page 1");
    check(r5.nextPaginationToken !== "" && r5.previousPaginationToken === "", "page 1 tokens, backwards");
    const r6 = await c.listNamespaces({ limit: 5 });
    check(r6.namespaces.length === 5 && r6.nextPaginationToken !== "", "limit 5");
    await fails(c.listNamespaces({ paginationToken: "invalid_token", limit: 10 }), Code.InvalidArgument, "invalid token");
    const r7 = await c.listNamespaces({ limit: 0 });
    check(r7.namespaces.length === 26 && r7.nextPaginationToken === "", "limit 0 is the default page");
  });
  add("namespaces/default has a real created_at", async (c) => {
    const d = (await c.getNamespace({ namespaceName: "default" })).namespace;
    check(d.createdAt > 1_700_000_000_000_000_000n, `created_at ${d.createdAt}`);
  });

  // ---- barriers_test.go ----
  add("barriers/listBarriers/validation", async (c) => {
    await ns(c, "namespace1");
    const r = await c.listBarriers({ namespaceName: "namespace1" });
    check(Array.isArray(r.barriers), "barriers");
    await fails(c.listBarriers({ namespaceName: "invalid@namespace" }), Code.InvalidArgument, "invalid namespace");
  });
  add("barriers/listBarriers/pagination", async (c) => {
    await ns(c, "test-namespace");
    for (let i = 1; i <= 25; i++) await barrier(c, "test-namespace", `barrier_${pad(i)}`, 3);
    const page = (t) => c.listBarriers({ namespaceName: "test-namespace", paginationToken: t, limit: 10 });
    const r1 = await page("");
    check(r1.barriers.length === 10 && r1.nextPaginationToken !== "" && r1.previousPaginationToken === "", "page 1");
    const r2 = await page(r1.nextPaginationToken);
    check(r2.barriers.length === 10 && r2.nextPaginationToken !== "" && r2.previousPaginationToken !== "", "page 2");
    const r3 = await page(r2.nextPaginationToken);
    check(r3.barriers.length === 5 && r3.nextPaginationToken === "" && r3.previousPaginationToken !== "", "page 3");
    eq(new Set([...r1.barriers, ...r2.barriers, ...r3.barriers].map((b) => b.name)).size, 25, "all 25");
    const r4 = await page(r3.previousPaginationToken);
    check(r4.barriers.length === 10 && r4.nextPaginationToken !== "" && r4.previousPaginationToken !== "", "back");
    eq(r4.barriers.map((b) => b.name), r2.barriers.map((b) => b.name), "back to page 2");
  });
  add("barriers/deleteBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    await c.deleteBarrier({ namespaceName: "namespace1", barrierName: "barrier1" });
    await fails(c.deleteBarrier({ namespaceName: "invalid@namespace", barrierName: "barrier1" }), Code.InvalidArgument, "invalid namespace");
  });
  add("barriers/getBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    await barrier(c, "namespace1", "barrier1", 3);
    eq((await c.getBarrier({ namespaceName: "namespace1", barrierName: "barrier1" })).barrier.name, "barrier1", "name");
    await fails(c.getBarrier({ namespaceName: "invalid@namespace", barrierName: "barrier1" }), Code.InvalidArgument, "invalid namespace");
  });
  add("barriers/createBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    eq((await barrier(c, "namespace1", "barrier1", 3)).name, "barrier1", "name");
    await fails(barrier(c, "invalid@namespace", "barrier2", 3), Code.InvalidArgument, "invalid namespace");
    await fails(barrier(c, "namespace1", "barrier3", 0), Code.InvalidArgument, "zero expected", "expected_processes must be greater than 0");
  });
  add("barriers/updateBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    const b = await barrier(c, "namespace1", "barrier1", 3, { description: "Original description" });
    eq([b.description, b.expectedProcesses], ["Original description", 3n], "created");
    const u = { namespaceName: "namespace1", barrierName: "barrier1", description: "Updated description", expectedProcesses: 5n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN };
    const r = await c.updateBarrier(u);
    eq([r.barrier.description, r.barrier.expectedProcesses], ["Updated description", 5n], "updated");
    await fails(c.updateBarrier({ ...u, namespaceName: "invalid@namespace" }), Code.InvalidArgument, "invalid namespace");
    await fails(c.updateBarrier({ ...u, expectedProcesses: 0n }), Code.InvalidArgument, "zero expected");
  });
  add("barriers/updateBarrier/update successfully", async (c) => {
    await ns(c, "test-namespace");
    const b = await barrier(c, "test-namespace", "test-barrier", 3, { description: "Original description" });
    await sleep(10);
    const r = await c.updateBarrier({ namespaceName: "test-namespace", barrierName: "test-barrier", description: "Updated description", expectedProcesses: 10n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN });
    eq([r.barrier.name, r.barrier.description, r.barrier.expectedProcesses], ["test-barrier", "Updated description", 10n], "updated");
    eq(r.barrier.createdAt, b.createdAt, "created_at unchanged");
    check(r.barrier.updatedAt > b.updatedAt, "updated_at moved");
    const g = await c.getBarrier({ namespaceName: "test-namespace", barrierName: "test-barrier" });
    eq([g.barrier.description, g.barrier.expectedProcesses], ["Updated description", 10n], "kept");
  });
  add("barriers/updateBarrier/cannot reduce expected_processes below arrived_processes", async (c) => {
    await ns(c, "test-namespace");
    await barrier(c, "test-namespace", "test-barrier", 5);
    for (let i = 0; i < 3; i++) await arrive(c, "test-namespace", "test-barrier", `process-${i}`, 1);
    const u = { namespaceName: "test-namespace", barrierName: "test-barrier", description: "Updated", expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN };
    // Contract: the message names both counts (Grackle's words differ).
    await fails(c.updateBarrier({ ...u, expectedProcesses: 2n }), Code.InvalidArgument, "below arrived", "is below arrived_processes 3");
    const r = await c.updateBarrier({ ...u, expectedProcesses: 3n });
    eq(r.barrier.expectedProcesses, 3n, "equal to arrived");
    // (equal to the arrived count trips the barrier: generation 2, none arrived)
    eq([r.barrier.generation, r.barrier.arrivedProcesses], [2n, 0n], "tripped");
    const r2 = await c.updateBarrier({ ...u, description: "Updated again", expectedProcesses: 10n, expectedVersion: 2n });
    eq(r2.barrier.expectedProcesses, 10n, "raised");
  });
  add("barriers/updateBarrier/update nonexistent barrier", async (c) => {
    await ns(c, "test-namespace");
    await fails(
      c.updateBarrier({ namespaceName: "test-namespace", barrierName: "nonexistent-barrier", description: "desc", expectedProcesses: 5n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN }),
      Code.NotFound,
      "missing",
      "barrier not found",
    );
  });
  add("barriers/arriveAtBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    await barrier(c, "namespace1", "barrier1", 3);
    await arrive(c, "namespace1", "barrier1", "proc1", 1);
    await fails(arrive(c, "invalid@namespace", "barrier1", "proc2", 1), Code.InvalidArgument, "invalid namespace");
    await fails(arrive(c, "namespace1", "barrier1", "proc3", 0), Code.InvalidArgument, "generation zero");
  });
  add("barriers/listBarrierParticipants/validation", async (c) => {
    await ns(c, "namespace1");
    await barrier(c, "namespace1", "barrier1", 3);
    const r = await c.listBarrierParticipants({ namespaceName: "namespace1", barrierName: "barrier1", generation: 1n });
    check(Array.isArray(r.participants), "participants");
    await fails(c.listBarrierParticipants({ namespaceName: "invalid@namespace", barrierName: "barrier1", generation: 1n }), Code.InvalidArgument, "invalid namespace");
  });
  add("barriers/listBarrierParticipants/pagination", async (c) => {
    await ns(c, "test-namespace");
    await barrier(c, "test-namespace", "test-barrier", 25);
    for (let i = 1; i <= 25; i++) await arrive(c, "test-namespace", "test-barrier", `process_${pad(i)}`, 1);
    const page = (t) => c.listBarrierParticipants({ namespaceName: "test-namespace", barrierName: "test-barrier", generation: 1n, paginationToken: t, limit: 10 });
    const r1 = await page("");
    check(r1.participants.length === 10 && r1.nextPaginationToken !== "" && r1.previousPaginationToken === "", "page 1");
    const r2 = await page(r1.nextPaginationToken);
    check(r2.participants.length === 10 && r2.nextPaginationToken !== "" && r2.previousPaginationToken !== "", "page 2");
    const r3 = await page(r2.nextPaginationToken);
    check(r3.participants.length === 5 && r3.nextPaginationToken === "" && r3.previousPaginationToken !== "", "page 3");
    const r4 = await page(r3.previousPaginationToken);
    check(r4.participants.length === 10 && r4.nextPaginationToken !== "" && r4.previousPaginationToken !== "", "back");
    eq(r4.participants.map((p) => p.processId), r2.participants.map((p) => p.processId), "back to page 2");
  });
  add("barriers/waitAtBarrier/validation", async (c) => {
    await ns(c, "namespace1");
    await barrier(c, "namespace1", "barrier1", 3);
    const w = { namespaceName: "namespace1", barrierName: "barrier1", expectedGeneration: 1n, timeoutSeconds: 1 };
    await c.waitAtBarrier(w);
    await fails(c.waitAtBarrier({ ...w, namespaceName: "invalid@namespace" }), Code.InvalidArgument, "invalid namespace");
    await fails(c.waitAtBarrier({ ...w, expectedGeneration: 0n }), Code.InvalidArgument, "generation zero");
    await fails(c.waitAtBarrier({ ...w, timeoutSeconds: 301 }), Code.InvalidArgument, "timeout too high");
  });
  add("barriers/waitAtBarrier/completion", async (c) => {
    await ns(c, "test-namespace");
    await barrier(c, "test-namespace", "test-barrier", 3);
    const arrivals = (async () => {
      for (const p of ["proc1", "proc2", "proc3"]) {
        await sleep(30);
        await arrive(c, "test-namespace", "test-barrier", p, 1);
      }
    })();
    const r = await c.waitAtBarrier({ namespaceName: "test-namespace", barrierName: "test-barrier", expectedGeneration: 1n, timeoutSeconds: 1 });
    await arrivals;
    eq(r.outcome, BarrierWaitOutcome.TRIPPED, "outcome");
    eq([r.barrier.expectedProcesses, r.barrier.arrivedProcesses, r.barrier.generation], [3n, 0n, 2n], "tripped barrier");
  });
  add("barriers/waitAtBarrier/timeout", async (c) => {
    await ns(c, "test-namespace");
    await barrier(c, "test-namespace", "test-barrier-timeout", 5);
    await arrive(c, "test-namespace", "test-barrier-timeout", "p1", 1);
    await arrive(c, "test-namespace", "test-barrier-timeout", "p2", 1);
    const r = await c.waitAtBarrier({ namespaceName: "test-namespace", barrierName: "test-barrier-timeout", expectedGeneration: 1n, timeoutSeconds: 1 });
    eq(r.outcome, BarrierWaitOutcome.TIMED_OUT, "outcome");
    eq([r.barrier.expectedProcesses, r.barrier.arrivedProcesses], [5n, 2n], "unchanged");
  });

  // ---- core_test.go, the cases an API client can drive ----
  add("core/create/duplicate name", async (c) => {
    await barrier(c, "default", "test_barrier", 3);
    await fails(barrier(c, "default", "test_barrier", 3), Code.AlreadyExists, "second create");
  });
  add("core/get/nonexistent barrier", async (c) => {
    await fails(c.getBarrier({ namespaceName: "default", barrierName: "nope" }), Code.NotFound, "missing", "barrier not found");
  });
  add("core/list/empty and multiple namespaces", async (c) => {
    await ns(c, "ns1");
    await ns(c, "ns2");
    eq((await c.listBarriers({ namespaceName: "ns1" })).barriers.length, 0, "empty");
    for (let i = 0; i < 3; i++) await barrier(c, "ns1", `barrier_ns1_${i}`, 3);
    for (let i = 0; i < 2; i++) await barrier(c, "ns2", `barrier_ns2_${i}`, 5);
    eq((await c.listBarriers({ namespaceName: "ns1" })).barriers.length, 3, "ns1");
    eq((await c.listBarriers({ namespaceName: "ns2" })).barriers.length, 2, "ns2");
  });
  add("core/delete/existing, nonexistent, and the name again", async (c) => {
    await barrier(c, "default", "test_barrier", 3);
    await c.deleteBarrier({ namespaceName: "default", barrierName: "test_barrier" });
    await fails(c.getBarrier({ namespaceName: "default", barrierName: "test_barrier" }), Code.NotFound, "deleted", "barrier not found");
    await c.deleteBarrier({ namespaceName: "default", barrierName: "nonexistent_barrier" });
    eq((await barrier(c, "default", "test_barrier", 3)).generation, 1n, "created again");
  });
  add("core/update/versions: increments, stale, future", async (c) => {
    await barrier(c, "default", "b", 3);
    const u = (v, n) => c.updateBarrier({ namespaceName: "default", barrierName: "b", expectedProcesses: BigInt(n), expectedVersion: BigInt(v), deleteInactiveAfterSeconds: TEN_MIN });
    eq((await u(1, 4)).barrier.version, 2n, "v2");
    eq((await u(2, 5)).barrier.version, 3n, "v3");
    await fails(u(1, 6), Code.FailedPrecondition, "stale version", "expected_version 1");
    await fails(u(9, 6), Code.FailedPrecondition, "future version", "expected_version 9");
  });
  add("core/update/shrinking expected_processes to arrived trips", async (c) => {
    await barrier(c, "default", "b", 4);
    await arrive(c, "default", "b", "p1", 1);
    await arrive(c, "default", "b", "p2", 1);
    const r = await c.updateBarrier({ namespaceName: "default", barrierName: "b", expectedProcesses: 2n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN });
    eq([r.barrier.generation, r.barrier.arrivedProcesses], [2n, 0n], "tripped");
  });
  add("core/arrive/multiple, twice, nonexistent, auto trip", async (c) => {
    await barrier(c, "default", "b", 3);
    const a1 = await arrive(c, "default", "b", "p1", 1);
    eq([a1.barrier.arrivedProcesses, a1.allArrived], [1n, false], "first");
    const again = await arrive(c, "default", "b", "p1", 1);
    eq([again.barrier.arrivedProcesses, again.allArrived], [1n, false], "repeat is a no-op");
    await arrive(c, "default", "b", "p2", 1);
    const last = await arrive(c, "default", "b", "p3", 1);
    eq([last.allArrived, last.barrier.generation, last.barrier.arrivedProcesses], [true, 2n, 0n], "auto trip");
    await fails(arrive(c, "default", "nope", "p1", 1), Code.NotFound, "missing barrier", "barrier not found");
  });
  add("core/arrive/single expected process and old generation", async (c) => {
    await barrier(c, "default", "solo", 1);
    const a = await arrive(c, "default", "solo", "p1", 1);
    eq([a.allArrived, a.barrier.generation], [true, 2n], "trips at once");
    // Contract: the seed's promise holds after a trip: the same process retrying is a no-op
    // that says all arrived; another process at the old generation is failed_precondition.
    const retry = await arrive(c, "default", "solo", "p1", 1);
    eq([retry.allArrived, retry.barrier.generation], [true, 2n], "retry after the trip");
    await fails(arrive(c, "default", "solo", "p2", 1), Code.FailedPrecondition, "old generation", "current generation 2");
  });
  add("core/metadata on barriers and participants", async (c) => {
    const b = await barrier(c, "default", "m", 2, { metadata: { team: "search", env: "prod" } });
    eq(b.metadata, { env: "prod", team: "search" }, "create");
    await arrive(c, "default", "m", "p1", 1, { host: "a" });
    const l = await c.listBarrierParticipants({ namespaceName: "default", barrierName: "m" });
    eq(l.participants.map((p) => [p.processId, p.metadata]), [["p1", { host: "a" }]], "participant metadata");
    const u = await c.updateBarrier({ namespaceName: "default", barrierName: "m", expectedProcesses: 2n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN });
    eq(u.barrier.metadata, {}, "update replaces metadata (none clears it)");
    await fails(barrier(c, "default", "m2", 2, { metadata: { "": "v" } }), Code.InvalidArgument, "empty key");
  });
  add("core/participants/empty and nonexistent barrier", async (c) => {
    await barrier(c, "default", "e", 2);
    eq((await c.listBarrierParticipants({ namespaceName: "default", barrierName: "e", generation: 1n })).participants.length, 0, "empty");
    await fails(c.listBarrierParticipants({ namespaceName: "default", barrierName: "nope" }), Code.NotFound, "missing");
  });
  add("core/last_activity_at: create sets it, arrive moves it, update does not", async (c) => {
    const b = await barrier(c, "default", "act", 3);
    eq(b.lastActivityAt, b.createdAt, "at create");
    await sleep(5);
    const a = await arrive(c, "default", "act", "p1", 1);
    check(a.barrier.lastActivityAt > b.lastActivityAt, "arrive moved it");
    const u = await c.updateBarrier({ namespaceName: "default", barrierName: "act", expectedProcesses: 4n, expectedVersion: 1n, deleteInactiveAfterSeconds: TEN_MIN });
    eq(u.barrier.lastActivityAt, a.barrier.lastActivityAt, "update left it");
  });
  add("core/deleteNamespace takes its barriers", async (c) => {
    await ns(c, "gone");
    await barrier(c, "gone", "b", 2);
    await c.deleteNamespace({ namespaceName: "gone" });
    await fails(c.getBarrier({ namespaceName: "gone", barrierName: "b" }), Code.NotFound, "namespace gone", "namespace not found");
    await ns(c, "gone");
    await fails(c.getBarrier({ namespaceName: "gone", barrierName: "b" }), Code.NotFound, "created again, empty", "barrier not found");
  });

  // ---- seed 003's example workflow ----
  add("seed 003/example workflow", async (c) => {
    await ns(c, "pipelines");
    const b = (
      await c.createBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete", description: "End of map phase", expectedProcesses: 4n, deleteInactiveAfterSeconds: 3600n })
    ).barrier;
    eq(
      [b.name, b.description, b.expectedProcesses, b.arrivedProcesses, b.generation, b.version, b.deleteInactiveAfterSeconds],
      ["phase_1_complete", "End of map phase", 4n, 0n, 1n, 1n, 3600n],
      "created",
    );
    check(b.createdAt === b.updatedAt && b.updatedAt === b.lastActivityAt && b.createdAt > 1_700_000_000_000_000_000n, "timestamps");
    const a0 = await arrive(c, "pipelines", "phase_1_complete", "shard-0", 1);
    eq([a0.barrier.arrivedProcesses, a0.barrier.generation, a0.allArrived], [1n, 1n, false], "shard-0");
    eq((await arrive(c, "pipelines", "phase_1_complete", "shard-0", 1)).barrier.arrivedProcesses, 1n, "retry is a no-op");
    // A worker waits; the other three arrive; it is released with generation 2.
    const waiter = c.waitAtBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete", expectedGeneration: 1n, timeoutSeconds: 300 });
    await sleep(50);
    for (const s of ["shard-1", "shard-2", "shard-3"]) await arrive(c, "pipelines", "phase_1_complete", s, 1);
    const w = await waiter;
    eq([w.outcome, w.barrier.generation, w.barrier.arrivedProcesses], [BarrierWaitOutcome.TRIPPED, 2n, 0n], "released");
    // The next phase: three arrive, a short wait times out, the barrier unchanged.
    for (const s of ["shard-0", "shard-1", "shard-2"]) await arrive(c, "pipelines", "phase_1_complete", s, 2);
    const t = await c.waitAtBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete", expectedGeneration: 2n, timeoutSeconds: 1 });
    eq([t.outcome, t.barrier.generation, t.barrier.arrivedProcesses], [BarrierWaitOutcome.TIMED_OUT, 2n, 3n], "timed out");
    const g = (await c.getBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete" })).barrier;
    eq([g.generation, g.arrivedProcesses], [2n, 3n], "inspected");
    const l = await c.listBarrierParticipants({ namespaceName: "pipelines", barrierName: "phase_1_complete", generation: 1n });
    eq(l.participants.map((p) => p.processId), ["shard-0", "shard-1", "shard-2", "shard-3"], "generation 1's participants");
    await c.deleteBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete" });
    await fails(c.getBarrier({ namespaceName: "pipelines", barrierName: "phase_1_complete" }), Code.NotFound, "deleted");
  });

  // ---- the caller's deadline ----
  add("deadline/ends a WaitAtBarrier before its timeout_seconds", async (c) => {
    await barrier(c, "default", "slow", 2);
    const t0 = Date.now();
    await fails(c.waitAtBarrier({ namespaceName: "default", barrierName: "slow", expectedGeneration: 1n, timeoutSeconds: 30 }, { timeoutMs: 700 }), Code.DeadlineExceeded, "deadline");
    check(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  });
  return list;
}

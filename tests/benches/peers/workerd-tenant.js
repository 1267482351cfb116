
// The tail of a tenant's worker module for tests/benches/peers.sh, appended to handlers.js by
// workerd-config.js: `POST /v1/invoke/{script}` with the body as the event, the handler's answer
// as JSON. With a `KEY` binding (one worker straight on the socket) it checks the caller's key
// itself; behind the dispatcher (dispatch.js, one worker per tenant) the dispatcher has.
const MAX_BODY_BYTES = 6 * 1024 * 1024; // native's cap (Lambda's payload limit)
const PREFIX = "/v1/invoke/";

function answer(status, body) {
  return new Response(body, { status, headers: { "content-type": "application/json" } });
}

function fail(status, message) {
  return answer(status, JSON.stringify({ error: message }));
}

export default {
  async fetch(request, env) {
    // The path from the absolute URL without a URL object: what node-server.js pays, no more.
    const url = request.url;
    const start = url.indexOf("/", url.indexOf("//") + 2);
    const end = url.indexOf("?", start);
    const path = end < 0 ? url.slice(start) : url.slice(start, end);
    if (request.method === "GET" && path === "/healthz") return answer(200, '{"ok":true}');
    if (request.method !== "POST" || !path.startsWith(PREFIX)) {
      return fail(404, "no endpoint: POST /v1/invoke/{script}");
    }
    if (env.KEY !== undefined && request.headers.get("authorization") !== "Bearer " + env.KEY) {
      return fail(401, "missing or unknown API key");
    }
    const name = path.slice(PREFIX.length);
    const handler = Object.prototype.hasOwnProperty.call(handlers, name) ? handlers[name] : null;
    if (handler === null) return fail(404, `no script ${name}`);
    if (Number(request.headers.get("content-length") || 0) > MAX_BODY_BYTES) {
      return fail(413, `request body is over ${MAX_BODY_BYTES} bytes`);
    }
    const body = await request.text();
    let event;
    try {
      event = body.trim() === "" ? {} : JSON.parse(body);
    } catch (e) {
      return fail(400, String(e && e.message));
    }
    return answer(200, JSON.stringify(handler(event)));
  },
};

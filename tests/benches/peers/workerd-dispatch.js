// The dispatcher of tests/benches/peers.sh's multi-tenant workerd: the caller's key names the
// tenant, whose own worker (own isolate) gets the request through a service binding, as a
// dispatch worker of Workers for Platforms would. KEYS is a JSON binding { KEY: TENANT }.
export default {
  async fetch(request, env) {
    const auth = request.headers.get("authorization") || "";
    const key = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    if (!Object.prototype.hasOwnProperty.call(env.KEYS, key)) {
      return new Response('{"error":"missing or unknown API key"}', {
        status: 401,
        headers: { "content-type": "application/json" },
      });
    }
    return env["tenant_" + env.KEYS[key]].fetch(request);
  },
};

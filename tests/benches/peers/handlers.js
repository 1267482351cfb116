// The two handlers of tests/benches/peers.sh in JavaScript, twins of native/noop.luau and
// native/order.luau. A plain script (no module syntax) so that every peer can load the same
// text: node-server.js runs it in the main realm or in one `node:vm` context per tenant, and
// peers.sh prepends it to the workerd worker module.
//
// Each handler takes the event (the request body, parsed) and returns what is answered as JSON.
var handlers = {
  noop: function (event) {
    return { ok: true };
  },
  order: function (event) {
    var items = event.items;
    var total = 0;
    var quantity = 0;
    for (var i = 0; i < items.length; i++) {
      var item = items[i];
      total += item.qty * item.price;
      quantity += item.qty;
    }
    return {
      order: event.id,
      currency: event.currency,
      lines: items.length,
      quantity: quantity,
      total: Math.round(total * 100) / 100,
    };
  },
};

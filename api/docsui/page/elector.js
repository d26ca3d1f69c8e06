// elector's /docs: Swagger UI over the gateway's own openapi.json. Only
// GET requests can be sent from the page ("Try it out"), so reading the
// docs never campaigns, resigns or changes a setting. The SSE streams
// (…/events) never end: the page reads one for a few seconds and shows
// what arrived until then.
"use strict";

// operationParameters moves each path item's parameters into its
// operations, which means the same in OpenAPI. Swagger UI 5 does not
// resolve a $ref among a path item's parameters in a 3.1 document (it
// shows a nameless parameter and cannot send the request), while it does
// resolve them in an operation's.
function operationParameters(spec) {
  const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
  for (const item of Object.values(spec.paths || {})) {
    if (!Array.isArray(item.parameters)) continue;
    for (const m of methods) {
      if (item[m]) item[m].parameters = item.parameters.concat(item[m].parameters || []);
    }
    delete item.parameters;
  }
  return spec;
}

// sampleStream fetches an SSE stream, reads it for a few seconds and
// answers with what arrived, so that "Try it out" on an endless stream
// shows its first events instead of waiting forever.
function sampleStream(url, init) {
  const ctrl = new AbortController();
  return fetch(url, Object.assign({}, init, { signal: ctrl.signal })).then(async function (res) {
    if (!res.ok || !res.body) return res;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const stop = setTimeout(function () { reader.cancel(); }, 3000);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    } catch (err) {
      text += ": " + err.message + "\n";
    }
    clearTimeout(stop);
    ctrl.abort();
    text += ": (the docs page stopped reading this endless stream after 3 seconds)\n";
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  });
}

function start(spec) {
  window.ui = SwaggerUIBundle({
    spec: operationParameters(spec),
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    supportedSubmitMethods: ["get"],
    displayRequestDuration: true,
    requestInterceptor: function (req) {
      if (/\/events(\?|$)/.test(req.url)) req.userFetch = sampleStream;
      return req;
    },
  });
}

window.addEventListener("load", function () {
  fetch("openapi.json")
    .then(function (res) {
      if (!res.ok) throw new Error("GET openapi.json: " + res.status);
      return res.json();
    })
    .then(start)
    .catch(function (err) {
      document.getElementById("swagger-ui").textContent =
        "The API description could not be loaded (" + err.message + "); see openapi.yaml.";
    });
});

// elector's /docs: Swagger UI over the gateway's own openapi.json. Only
// GET requests can be sent from the page ("Try it out"), so reading the
// docs never campaigns, resigns or changes a setting. The SSE streams
// (…/events) never end: a request to one is cut after a few seconds so
// that the page shows what arrived until then.
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
      if (/\/events(\?|$)/.test(req.url) && typeof AbortSignal.timeout === "function") {
        req.signal = AbortSignal.timeout(3000);
      }
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

// elector's /docs: Swagger UI over the gateway's own openapi.json. Only
// GET requests can be sent from the page ("Try it out"), so reading the
// docs never campaigns, resigns or changes a setting. The SSE streams
// (…/events) never end: a request to one is cut after a few seconds so
// that the page shows what arrived until then.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
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
});

// Renders /v1/openapi.json with Swagger UI, served by this service (no CDN, no validator call).
(function () {
  const options = JSON.parse(document.getElementById('api-reference-options').textContent);
  window.ui = SwaggerUIBundle({
    url: options.url,
    dom_id: '#swagger-ui',
    deepLinking: true,
    // The default sends the document to validator.swagger.io: nothing leaves this service.
    validatorUrl: null,
    // Credentials typed into "Authorize" stay in this tab (not in localStorage).
    persistAuthorization: false,
    displayRequestDuration: true,
    docExpansion: 'none',
    filter: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
})();

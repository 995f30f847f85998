// The browser pages' own small assets, as strings so that the build bundles them (no file is read at
// run time: dist/ runs without src/). Served under /assets/ by ./assets.ts.
export const ownAssets: Record<string, string> = {
  'graphiql-start.js': `// Starts GraphiQL (development mode) from assets of this service only: no inline script, no CDN.
// The options (example tabs, the headers template) and the worker URLs come from the page's JSON blocks.
(function () {
  const read = (id) => JSON.parse(document.getElementById(id).textContent);
  const workers = read('graphiql-workers');
  self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workers[label] };
  document.addEventListener('DOMContentLoaded', () => {
    YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), read('graphiql-options'));
  });
})();
`,
  'api-reference-start.js': `// Renders /v1/openapi.json with Swagger UI, served by this service (no CDN, no validator call).
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
`,
  'pages.css': `:root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; }
main.home { max-width: 46rem; margin: 3rem auto; padding: 0 1.25rem; line-height: 1.5; }
nav.bar { display: flex; gap: 1.25rem; align-items: baseline; padding: 0.6rem 1.25rem; border-bottom: 1px solid #8884; font-size: 0.95rem; }
nav.bar strong { margin-right: auto; }
dt { font-weight: 600; margin-top: 1rem; }
dd { margin-left: 0; }
code { font-size: 0.92em; }
`,
};

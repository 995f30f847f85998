// Starts GraphiQL (development mode) from assets of this service only: no inline script, no CDN.
// The options (example tabs, the headers template) and the worker URLs come from the page's JSON blocks.
(function () {
  const read = (id) => JSON.parse(document.getElementById(id).textContent);
  const workers = read('graphiql-workers');
  self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workers[label] };
  document.addEventListener('DOMContentLoaded', () => {
    YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), read('graphiql-options'));
  });
})();

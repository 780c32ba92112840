// Starts the reference UI on this edge's own document (a file, not an inline script: the CSP allows none).
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    tryItOutEnabled: false,
  })
})

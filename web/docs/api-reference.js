// The API reference page: Redoc (self-hosted, from the redoc package) rendering /api/openapi.json.
// Telemetry is off, and the page's CSP would refuse any other origin anyway.
import { init } from './redoc.standalone.js';

const root = document.getElementById('redoc');
init(
  '/api/openapi.json',
  {
    disableTelemetry: true,
    router: 'hash',
    hideLoading: false,
  },
  root,
);

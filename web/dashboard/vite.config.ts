// Vite build of the merchant dashboard: web/dashboard → web/dist/dashboard, served at /dashboard/.
// TSX is transformed by Vite's built-in oxc with React's automatic JSX runtime (no React plugin).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/dashboard/',
  logLevel: 'warn',
  clearScreen: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    sourcemap: false,
  },
  // `npx vite web/dashboard` serves the app with hot reload against a running `npm start`.
  server: { proxy: { '/api': 'http://localhost:3000' } },
});

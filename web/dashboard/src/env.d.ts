// Side-effect CSS imports, bundled by Vite.
declare module '*.css';

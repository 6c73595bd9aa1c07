# Kassa's container image: a build stage with every dependency builds the dashboard; the runtime stage
# has the production dependencies only (no build tools' native binaries), the built files and the
# TypeScript sources, which Node 24 runs directly. Data (SQLite, the generated secret key, mail files)
# lives in /data; set DATABASE_URL to use PostgreSQL instead (see compose.yaml and docs/deploy.md).

# --- build: the full install, then `npm run build` (the dashboard, with Vite) ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/
# --ignore-scripts: the `node` dev dependency would download a second Node 24; the image has one.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build

# --- runtime ---
FROM node:24-bookworm-slim AS runtime
# No KASSA_PORT here: the service listens on 3000 unless the platform sets PORT (or you KASSA_PORT).
ENV NODE_ENV=production \
    KASSA_DATA_DIR=/data \
    KASSA_HOST=0.0.0.0 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/
# Optional dependencies are the build tools' platform binaries (Rolldown, Lightning CSS): not needed
# once the dashboard is built.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY bin bin
COPY src src
COPY web/hosted web/hosted
COPY web/docs web/docs
COPY docs docs
COPY README.md ./
COPY sdk/README.md sdk/
COPY --from=build /app/web/dist web/dist
RUN ln -s /app/bin/kassa.js /usr/local/bin/kassa && mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Shell form, so the check follows the port the service listens on (KASSA_PORT, else PORT, else 3000,
# as the service chooses it).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:${KASSA_PORT:-${PORT:-3000}}/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["node", "--max-semi-space-size=8", "--disable-warning=ExperimentalWarning", "src/cli/main.ts", "serve"]

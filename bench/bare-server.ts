// The baseline: one Fastify route and nothing else, on this machine and this Node. The benchmark
// reports every Kassa figure as a ratio to it, so the numbers travel between machines.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/bare', async () => ({ status: 'ok' }));
const url = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`bare: listening on ${url}`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(() => process.exit(0));
  });
}

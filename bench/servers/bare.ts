/**
 * Child server: a bare Fastify 5 app with one JSON route, the baseline tabwire's routes are
 * compared to. Args: <port>.
 */
import Fastify from 'fastify';
import { serveAsChild } from './protocol.js';
import { encodeReference } from './reference.js';

await serveAsChild(async () => {
  const port = Number(process.argv[2] ?? '0');
  const app = Fastify({ logger: false });
  app.post('/bare', async () => ({ ok: true, service: 'bare' }));
  await app.listen({ host: '127.0.0.1', port });
  const { port: bound } = app.server.address() as { port: number };
  return { port: bound, close: () => app.close() };
}, { reference: encodeReference });

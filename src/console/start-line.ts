/**
 * The line a person starting the service reads first: where to go now. The demo page is at `/`, the
 * API reference at `/docs` (its OpenAPI document at `/openapi.json`).
 */
export function startLine(publicBaseUrl: string): { fields: { demo: string; docs: string }; message: string } {
  const demo = `${publicBaseUrl}/`;
  const docs = `${publicBaseUrl}/docs`;
  return { fields: { demo, docs }, message: `tabwire is listening: open ${demo} for the demo, ${docs} for the API reference` };
}

/**
 * Fastify's `listenTextResolver`: the start line, with its URLs as fields, for the first address; a plain
 * "also listening" for each further one (a wildcard host listens on every interface). Fastify hands the
 * answer to pino's `info`, which takes an object carrying `msg` as a line with fields; Fastify's type
 * says string, hence the cast.
 */
export function listeningText(publicBaseUrl: string): (address: string) => string {
  let first = true;
  return (address) => {
    if (!first) return `also listening at ${address}`;
    first = false;
    const start = startLine(publicBaseUrl);
    return { publicBaseUrl, ...start.fields, listening: address, msg: start.message } as unknown as string;
  };
}

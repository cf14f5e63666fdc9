/**
 * The line a person starting the service reads first: where to go now. The demo page is at `/`, the
 * API reference at `/docs` (its OpenAPI document at `/openapi.json`), and, when the OpenID Provider is on,
 * the issuer relying parties are configured with (docs/oidc.md).
 */
export function startLine(publicBaseUrl: string, oidcIssuer?: string): { fields: { demo: string; docs: string; oidcIssuer?: string }; message: string } {
  const demo = `${publicBaseUrl}/`;
  const docs = `${publicBaseUrl}/docs`;
  const message = `tabwire is listening: open ${demo} for the demo, ${docs} for the API reference`;
  if (oidcIssuer === undefined) return { fields: { demo, docs }, message };
  return { fields: { demo, docs, oidcIssuer }, message: `${message}; OpenID Provider issuer ${oidcIssuer}` };
}

/**
 * Fastify's `listenTextResolver`: the start line, with its URLs as fields, for the first address; a plain
 * "also listening" for each further one (a wildcard host listens on every interface). Fastify hands the
 * answer to pino's `info`, which takes an object carrying `msg` as a line with fields; Fastify's type
 * says string, hence the cast.
 */
export function listeningText(publicBaseUrl: string, oidcIssuer?: string): (address: string) => string {
  let first = true;
  return (address) => {
    if (!first) return `also listening at ${address}`;
    first = false;
    const start = startLine(publicBaseUrl, oidcIssuer);
    return { publicBaseUrl, ...start.fields, listening: address, msg: start.message } as unknown as string;
  };
}

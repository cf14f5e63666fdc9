/**
 * The line a person starting the service reads first: where to go now. The demo page is at `/`, the
 * API reference at `/docs` (its OpenAPI document at `/openapi.json`).
 */
export function startLine(publicBaseUrl: string): { fields: { demo: string; docs: string }; message: string } {
  const demo = `${publicBaseUrl}/`;
  const docs = `${publicBaseUrl}/docs`;
  return { fields: { demo, docs }, message: `tabwire is listening: open ${demo} for the demo, ${docs} for the API reference` };
}

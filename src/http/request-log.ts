import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** Characters of a login code that request logs keep (as the QuickLogin module's own logs do). */
export const LOGGED_CODE_PREFIX = 6;

/**
 * Paths whose segment after the prefix is a login code: the sign URL (and its /Dev approval), the QR
 * image and result attachments. A full code in a log would let anyone who reads the log sign in
 * someone's place (it is a bearer secret until it expires), so logs keep only its first characters.
 * Matched case-insensitively, so a differently spelled path cannot carry a code into the log either.
 */
const CODE_IN_PATH = /^(\/QuickLogin\/(?:Sign|Qr|Attachment)\/)([^/?#]*)/i;

/** `url` with a login code in its path cut to its first LOGGED_CODE_PREFIX characters. */
export function redactUrl(url: string): string {
  return url.replace(CODE_IN_PATH, (_all, path: string, code: string) =>
    code.length <= LOGGED_CODE_PREFIX ? path + code : `${path}${code.slice(0, LOGGED_CODE_PREFIX)}…`,
  );
}

/** Fastify's default request serializer, with the URL redacted (see redactUrl). */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * The access log: one line per answered request (`request completed` at `info`, `request errored` at
 * `error`) with the request (serialized as above), the status and the time it took, instead of
 * Fastify's two lines per request (one on arrival without the status, one on the answer without the
 * URL). On the QR path, where every waiting page asks every 2 s, each log line cost as much as a fifth of
 * the request (docs/benchmarks.md#access-log). Error logs of the default error handler are kept as Fastify writes them.
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Reads HTTP/1.1 answers off a raw keep-alive socket, for the load generators that skip node:http to stay
 * cheap next to the server they measure (bench/lib/load/keep-alive-connection.ts, bench/servers/waiting/http-pool.ts).
 * It reads only what the servers measured here send: one answer per request, its body sized by
 * Content-Length (no chunking).
 */

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;

/** One answer, read whole. */
export interface HttpAnswer {
  /** From the status line (`HTTP/1.1 200 OK`). */
  status: number;
  /** The status line and headers, without the blank line that ends them (latin1). */
  head: string;
  body: Buffer;
}

/** Collects the bytes of the answer to the one request in flight on a connection. */
export class AnswerReader {
  private pending: Buffer = Buffer.alloc(0);

  /**
   * Adds a chunk: returns the answer once it is whole, undefined until then. Throws for an answer it
   * cannot read (no Content-Length) and for bytes beyond the answer (nothing asked for them); either
   * leaves the connection of no further use.
   */
  read(chunk: Buffer): HttpAnswer | undefined {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const headerEnd = this.pending.indexOf(HEADER_END);
    if (headerEnd < 0) return undefined;
    const head = this.pending.toString('latin1', 0, headerEnd);
    const status = Number(head.slice(9, 12));
    const match = CONTENT_LENGTH.exec(head);
    if (!match) throw new Error(`answer without Content-Length (status ${status}); this generator does not read chunked bodies`);
    const bodyStart = headerEnd + HEADER_END.length;
    const end = bodyStart + Number(match[1]);
    if (this.pending.length < end) return undefined;
    if (this.pending.length > end) throw new Error('more bytes than one answer: the server sent something unasked');
    const body = this.pending.subarray(bodyStart);
    this.pending = Buffer.alloc(0);
    return { status, head, body };
  }
}

import type { DestinationStream } from 'pino';
import PinoPretty from 'pino-pretty';
import type { Config } from '../config/schema.js';

/**
 * Where the process's log lines go and in which form (docs/configuration.md "Logs"): JSON lines for
 * machines (a journal, a log shipper, a pipe), one readable line per entry for a person at a terminal.
 */
export type LogFormat = 'pretty' | 'json';

/** `auto` follows stdout: a terminal gets readable lines, anything else JSON. */
export function chooseLogFormat(setting: Config['logFormat'], stdoutIsTerminal: boolean): LogFormat {
  if (setting === 'auto') return stdoutIsTerminal ? 'pretty' : 'json';
  return setting;
}

/** Fields the readable form shows in its message (access lines) or leaves out as noise on a terminal. */
const SHOWN_IN_MESSAGE = ['req', 'res', 'responseTime', 'reqId', 'module'];

interface AccessFields {
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

/**
 * The message of one readable line: an access-log entry (http/request-log.ts) as
 * `GET /QuickLogin 200 3.1 ms`, any other entry as its message after its module (`[quicklogin] …`).
 */
export function readableMessage(log: Record<string, unknown>, messageKey = 'msg'): string {
  const message = typeof log[messageKey] === 'string' ? (log[messageKey] as string) : '';
  const { req, res, responseTime } = log as AccessFields;
  if (req?.method !== undefined && res?.statusCode !== undefined) {
    const time = typeof responseTime === 'number' ? ` ${responseTime.toFixed(1)} ms` : '';
    const line = `${req.method} ${req.url ?? ''} ${res.statusCode}${time}`;
    return message === 'request completed' ? line : `${line}: ${message}`;
  }
  return typeof log.module === 'string' ? `[${log.module}] ${message}` : message;
}

/**
 * The readable form: pino-pretty in this process (not a worker-thread transport, so the message
 * formatter above can be a function, and lines written just before an exit are not lost), writing
 * synchronously to stdout. Colours when stdout is a colour terminal (pino-pretty honours NO_COLOR).
 */
export function prettyLogStream(destination: number | NodeJS.WritableStream = 1): DestinationStream {
  return PinoPretty({
    destination,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: ['pid', 'hostname', ...SHOWN_IN_MESSAGE].join(','),
    // Remaining fields (a code prefix, an identity id) on the same line as JSON: one entry, one line.
    singleLine: true,
    messageFormat: (log, messageKey) => readableMessage(log, messageKey),
  });
}

/** The log destination for buildApp: undefined keeps pino's JSON lines on stdout. */
export function logStreamFor(format: LogFormat): DestinationStream | undefined {
  return format === 'pretty' ? prettyLogStream() : undefined;
}

import { UsageError } from './args.js';

/**
 * Checks the `<signUrl>` given to `tabwire sign` before anything is fetched, so that a pasted
 * placeholder from the documentation or a truncated copy gets a message saying what to paste instead
 * of a bare "Invalid URL". A signUrl is `{publicBaseUrl}/QuickLogin/Sign/{code}` (docs/signing.md).
 */

const EXAMPLE = 'https://auth.example.org/QuickLogin/Sign/3q2-7wEe9kAbc_Q1xYzN0w';
const HOW = `paste the signUrl the page or \`tabwire login\` printed, for example ${EXAMPLE}`;

// Words documentation and scripts use where the real URL goes: <signUrl>, SIGN_URL, $SIGNURL, {signUrl}, "..." .
const PLACEHOLDER = /^[<{[$%]|[>}\]]$|^\.\.\.?$|^…$|^(sign[_-]?url|url|signurl)$/i;

/** Returns the parsed signUrl; throws UsageError (naming the fix) for a placeholder, a malformed URL or another kind of URL. */
export function parseSignUrl(text: string): URL {
  const trimmed = text.trim();
  if (trimmed === '' || PLACEHOLDER.test(trimmed) || /paste|<.*>/i.test(trimmed)) {
    throw new UsageError(`"${text}" is a placeholder, not a signUrl: ${HOW}`, 'sign');
  }
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new UsageError(`"${text}" is not a URL: ${HOW}`, 'sign');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`"${text}" is not an http(s) URL: ${HOW}`, 'sign');
  }
  if (!/\/QuickLogin\/Sign\/[A-Za-z0-9_-]{1,64}$/.test(url.pathname)) {
    throw new UsageError(`"${text}" is not a signUrl (its path must end in /QuickLogin/Sign/<code>): ${HOW}`, 'sign');
  }
  return url;
}

import xml from '@xmpp/xml';

/** Largest accepted payload, in UTF-8 bytes (Prosody's default stanza limit is 512 KiB; one payload stays well under it). */
export const MAX_XML_PAYLOAD_BYTES = 64 * 1024;

export type XmlPayloadResult = { ok: true; xml: string } | { ok: false; error: string };

/**
 * Validates an XML payload for SendXmlMessage: exactly one root element, no DOCTYPE, entity declarations,
 * comments, CDATA or processing instructions, at most 64 KiB. Returns the element re-serialized by the XML
 * library, so what goes into a stanza is always library output, never the caller's string.
 */
export function parseXmlPayload(text: string): XmlPayloadResult {
  try {
    return { ok: true, xml: parseXmlElement(text).toString() };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

/** Parses one XML element (the same rules as parseXmlPayload); throws an Error saying what is wrong. */
export function parseXmlElement(text: string): xml.Element {
  if (Buffer.byteLength(text, 'utf8') > MAX_XML_PAYLOAD_BYTES) throw new Error(`XML payload larger than ${MAX_XML_PAYLOAD_BYTES} bytes`);
  const source = text.trim();
  // ltx does not expand external entities, but it silently skips `<!...>` and `<?...?>`, so refuse them outright:
  // no DOCTYPE/ENTITY (XXE, billion laughs), and nothing the re-serialized element would quietly drop.
  if (source.includes('<!')) throw new Error('DOCTYPE, entity declarations, comments and CDATA are not allowed');
  if (source.includes('<?')) throw new Error('processing instructions and XML declarations are not allowed');
  // Text before or after the root would be dropped or glued onto it by the stream parser.
  if (!source.startsWith('<') || !source.endsWith('>')) throw new Error('XML payload must be exactly one element');

  // @xmpp/xml's Parser is a stream parser: the root is `start`, each of its children an `element`, its close `end`.
  const parser = new xml.Parser();
  let root: xml.Element | undefined;
  let ended = false;
  let error: Error | undefined;
  const fail = (message: string) => {
    error ??= new Error(message);
  };
  parser.on('start', (el: xml.Element) => {
    root = el;
  });
  parser.on('element', (el: xml.Element) => {
    if (ended || !root) fail('XML payload must have exactly one root element');
    else root.append(el);
  });
  let childrenAtEnd = 0;
  parser.on('end', () => {
    if (ended) fail('XML payload must have exactly one root element');
    ended = true;
    childrenAtEnd = root?.children.length ?? 0;
  });
  parser.on('error', (err: Error) => fail(`malformed XML: ${err.message}`));
  try {
    parser.write(source);
  } catch (err) {
    // ltx throws on unknown entities (`&foo;`) and illegal character references; @xmpp/xml's Parser throws a
    // TypeError on an end tag with nothing open.
    fail(err instanceof TypeError || !(err instanceof Error) ? 'malformed XML' : `malformed XML: ${err.message}`);
  }
  if (error) throw error;
  if (!root || !ended) throw new Error('malformed XML: the root element is not closed');
  // The parser appends text that follows the root's close to the root itself.
  if (root.children.length !== childrenAtEnd) throw new Error('XML payload must be exactly one element');
  assertSerializable(root);
  return root;
}

/** An NCName (XML Namespaces §3), slightly stricter than the spec; prefixes are split off before matching. */
const NCNAME = /^[\p{L}_][\p{L}\p{N}_.\-\u00B7\u0300-\u036F\u203F-\u2040]*$/u;
/** Characters XML 1.0 forbids (§2.2); ltx would write them out unescaped. With `u`, the surrogate range matches only lone ones. */
const ILLEGAL_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/u;

/** Whether a string can appear in XML 1.0 text or attribute values (§2.2 `Char`). */
export function isXmlText(text: string): boolean {
  return !ILLEGAL_CHARS.test(text);
}

/** Throws when a string cannot appear in XML 1.0 text or attribute values. */
export function assertXmlText(text: string): void {
  if (!isXmlText(text)) throw new Error('text contains characters not allowed in XML');
}

/**
 * ltx accepts names and prefixes that Prosody's expat parser rejects; one such stanza would make Prosody close the
 * whole component stream (RFC 6120 §4.9.3.12 not-well-formed), so refuse them here.
 */
function assertSerializable(el: xml.Element): void {
  assertQName(el.name, el, 'element');
  for (const [name, value] of Object.entries(el.attrs)) {
    if (name !== 'xmlns' && !name.startsWith('xmlns:')) assertQName(name, el, 'attribute');
    else if (name.startsWith('xmlns:') && !NCNAME.test(name.slice(6))) throw new Error(`invalid namespace prefix in ${name}`);
    if (value !== undefined) assertXmlText(value);
  }
  for (const child of el.children) {
    if (typeof child === 'string') assertXmlText(child);
    else assertSerializable(child);
  }
}

function assertQName(name: string, el: xml.Element, what: string): void {
  const parts = name.split(':');
  if (parts.length > 2 || !parts.every((part) => NCNAME.test(part))) throw new Error(`invalid ${what} name ${JSON.stringify(name)}`);
  const prefix = parts.length === 2 ? parts[0] : undefined;
  if (prefix !== undefined && prefix !== 'xml' && !boundPrefix(el, prefix)) throw new Error(`unbound namespace prefix ${JSON.stringify(prefix)}`);
}

function boundPrefix(el: xml.Element | null | undefined, prefix: string): boolean {
  for (let at = el; at; at = at.parent) if (at.attrs[`xmlns:${prefix}`]) return true;
  return false;
}

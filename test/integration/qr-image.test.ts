import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUIET_ZONE } from '../../src/quicklogin/qr-matrix.js';
import { post, registered } from '../helpers/http.js';
import { decodePng } from '../helpers/qr-decode.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let tab: TestTab;
const MODULE_PIXELS = 6; // the default qrModulePixels

beforeAll(async () => {
  service = await startService();
  tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
});
afterAll(async () => {
  tab.close();
  await service.close();
});

/** An image-mode QR answer for the test tab. */
async function imageCode(): Promise<{ src: string; signUrl: string; width: number }> {
  const answer = await post(service, '/QuickLogin', { mode: 'image', purpose: 'Log in', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** GETs a URL exactly as a page's <img> would (no base prepended). */
async function load(url: string): Promise<{ status: number; type: string; cacheControl: string | null; body: Buffer; json?: any }> {
  const response = await fetch(url);
  const type = response.headers.get('content-type') ?? '';
  const body = Buffer.from(await response.arrayBuffer());
  return { status: response.status, type, cacheControl: response.headers.get('cache-control'), body, json: type.includes('json') ? JSON.parse(body.toString()) : undefined };
}

const rgb = (png: PNG, x: number, y: number) => {
  const i = (y * png.width + x) * 4;
  return [png.data[i], png.data[i + 1], png.data[i + 2]];
};
/** The background (quiet zone corner) and a module colour (the top-left finder pattern's corner). */
const colours = (bytes: Buffer) => {
  const png = PNG.sync.read(bytes);
  const corner = QUIET_ZONE * MODULE_PIXELS;
  return { light: rgb(png, 0, 0), dark: rgb(png, corner, corner) };
};
const BLACK_ON_WHITE = { dark: [0, 0, 0], light: [255, 255, 255] };

describe('image mode src on a page of another host', () => {
  it('is absolute on the public base, so <img src> loads it from the service whatever the page host', async () => {
    const { src, signUrl, width } = await imageCode();
    expect(src).toMatch(new RegExp(`^${service.publicBaseUrl}/QuickLogin/Qr/[A-Za-z0-9_-]{22}\\.png$`));
    const image = await load(src);
    expect([image.status, image.type]).toEqual([200, 'image/png']);
    expect(decodePng(image.body)).toBe(signUrl);
    expect(image.body.readUInt32BE(16)).toBe(width);
  });
});

describe('the appended "&fg=Theme&bg=Theme" (regression: 400 for /QuickLogin/Qr/<code>.png&fg=Theme&bg=Theme)', () => {
  it('loads the default black-on-white PNG, still cacheable while the code is valid', async () => {
    const { src, signUrl } = await imageCode();
    const image = await load(`${src}&fg=Theme&bg=Theme`);
    expect([image.status, image.type]).toEqual([200, 'image/png']);
    expect(decodePng(image.body)).toBe(signUrl);
    expect(colours(image.body)).toEqual(BLACK_ON_WHITE);
    expect(image.body.equals((await load(src)).body)).toBe(true);
    expect(image.cacheControl).toMatch(/^private, max-age=(29\d|300)$/);
  });

  it('renders a colour pair given in the suffix or in the query', async () => {
    const { src, signUrl } = await imageCode();
    for (const url of [`${src}&fg=%23000080&bg=%23fffff0`, `${src}&fg=navy&bg=fffff0`, `${src}?fg=%23000080&bg=%23FFFFF0`]) {
      const image = await load(url);
      expect([url, image.status, image.type]).toEqual([url, 200, 'image/png']);
      expect(image.body[25]).toBe(3); // indexed colour
      expect(colours(image.body)).toEqual({ dark: [0, 0, 0x80], light: [0xff, 0xff, 0xf0] });
      expect(decodePng(image.body)).toBe(signUrl);
    }
  });

  it('falls back to black on white for equal colours, an inverted pair and unknown values', async () => {
    const { src } = await imageCode();
    for (const suffix of ['&fg=navy&bg=navy', '&fg=white&bg=black', '&fg=banana&bg=', '&fg=%2312&bg=Theme&x=%2F']) {
      const image = await load(`${src}${suffix}`);
      expect([suffix, image.status]).toEqual([suffix, 200]);
      expect(image.body[25]).toBe(0); // the 1-bit greyscale PNG
      expect(colours(image.body)).toEqual(BLACK_ON_WHITE);
    }
  });

  it('refuses only a malformed image name, with problem+json 400', async () => {
    const { src } = await imageCode();
    const base = src.slice(0, -'.png'.length);
    for (const url of [`${base}.pngx`, `${base}.png.png`, `${base}.gif&fg=Theme`, `${base.replace(/[^/]+$/, 'bad!code')}.png`]) {
      const answer = await load(url);
      expect([url, answer.status, answer.type]).toEqual([url, 400, 'application/problem+json; charset=utf-8']);
      expect(answer.json.code).toBe('validation_failed');
    }
  });

  it('answers 404 once the code expired, whatever the suffix', async () => {
    const { src } = await imageCode();
    service.clock.advance(300_000);
    const gone = await load(`${src}&fg=Theme&bg=Theme`);
    expect([gone.status, gone.json?.code]).toEqual([404, 'not_found']);
  });
});

/**
 * QR encoder comparison: the npm QR encoders tabwire could use, each forced to what a signUrl needs
 * (byte mode, error correction M), measured in one process in interleaved slices for (a) encoding
 * rate, (b) symbol size for this service's signUrls and (c) whether an independent decoder (jsQR)
 * reads every symbol back. The figures behind the encoder choice in docs/dependencies.md.
 */
import jsQRModule from 'jsqr';
import nayukiModule from 'nayuki-qr-code-generator';
import encodeQR from 'qr';
import QRCode from 'qrcode';
import qrcodeGenerator from 'qrcode-generator';
import { encode as uqrEncode } from 'uqr';
import { cpus } from 'node:os';
import { newCode } from '../src/quicklogin/codes.js';
import { encodeQr } from '../src/quicklogin/qr-matrix.js';
import { versionOf } from './lib/common.js';
import { backgroundLoad } from './lib/measure/sysload.js';
import { formatMicros, formatRate, formatRatio, table } from './lib/measure/stats.js';
import { measureInterleaved, type OperationSpec } from './lib/measure/timing.js';
import type { BenchReport, Benchmark, Measurement } from './lib/measure/types.js';

type JsQR = typeof jsQRModule.default;
// jsqr is CommonJS with a `default` export; see test/helpers/qr-decode.ts.
const jsQR: JsQR = typeof jsQRModule === 'function' ? (jsQRModule as unknown as JsQR) : jsQRModule.default;
// nayuki-qr-code-generator ships ES module syntax in a package without "type": "module": Node loads it
// as ESM (its default export is the namespace), TypeScript types it as CommonJS (one `default` deeper).
type Nayuki = typeof nayukiModule.default;
const nayuki: Nayuki = 'QrCode' in nayukiModule ? (nayukiModule as unknown as Nayuki) : nayukiModule.default;

/** 9 slices of 200 ms per encoder and URL, taken in turn, after a 300 ms warm-up: about 25 s. */
const TIMING = { rounds: 9, sliceMs: 200, warmupMs: 300, otherLimitPercent: 10 };
/** Distinct URLs cycled through, so no encoder sees the same text twice in a row. */
const POOL = 1024;
/** Symbols per encoder and URL decoded back with jsQR. */
const DECODED = 300;
/** Pixels per module and quiet zone (modules) of the bitmaps handed to jsQR. */
const DECODE_SCALE = 4;
const DECODE_QUIET = 4;

/** The signUrls measured: a public deployment and the loopback default (config publicBaseUrl). */
const URLS = [
  { name: 'public', base: 'https://auth.example.org/QuickLogin/Sign/' },
  { name: 'loopback', base: 'http://127.0.0.1:8080/QuickLogin/Sign/' },
] as const;

/** A symbol as each library returns it, reduced to the same question: is this module dark? */
interface Symbol {
  size: number;
  dark(row: number, col: number): boolean;
}

interface Candidate {
  key: string;
  /** Package name (its version is read from node_modules). */
  pkg: string;
  /** How it is called: the options that force byte mode and EC M. */
  call: string;
  encode(url: string): unknown;
  /** The symbol of an `encode` result, without any border the library added. */
  symbol(result: unknown): Symbol;
}

const bytesOf = (url: string): number[] => Array.from(Buffer.from(url, 'utf8'));

const CANDIDATES: Candidate[] = [
  {
    key: 'qrcode',
    pkg: 'qrcode',
    call: "QRCode.create([{ data: Buffer, mode: 'byte' }], { errorCorrectionLevel: 'M' })",
    encode: (url) => QRCode.create([{ data: Buffer.from(url, 'utf8'), mode: 'byte' }], { errorCorrectionLevel: 'M' }),
    symbol: (r) => {
      const { size, data } = (r as QRCode.QRCode).modules;
      return { size, dark: (row, col) => data[row * size + col] === 1 };
    },
  },
  {
    key: 'qr',
    pkg: 'qr',
    call: "encodeQR(url, 'raw', { ecc: 'medium', encoding: 'byte', border: 1 })",
    encode: (url) => encodeQR(url, 'raw', { ecc: 'medium', encoding: 'byte', border: 1 }),
    // `raw` always includes a border (at least 1 module): slice it off.
    symbol: (r) => {
      const rows = r as boolean[][];
      return { size: rows.length - 2, dark: (row, col) => rows[row + 1]![col + 1]! };
    },
  },
  {
    key: 'qr.defaults',
    pkg: 'qr',
    call: "encodeQR(url, 'raw')  [its defaults: ecc medium, detected encoding, border 2]",
    encode: (url) => encodeQR(url, 'raw'),
    // Reported as returned, border included: this is the "41 vs 37 modules" of a 63-byte URL.
    symbol: (r) => {
      const rows = r as boolean[][];
      return { size: rows.length, dark: (row, col) => rows[row]![col]! };
    },
  },
  {
    key: 'uqr',
    pkg: 'uqr',
    call: "encode(bytes, { ecc: 'M', border: 0 })",
    encode: (url) => uqrEncode(bytesOf(url), { ecc: 'M', border: 0 }),
    symbol: (r) => {
      const { size, data } = r as ReturnType<typeof uqrEncode>;
      return { size, dark: (row, col) => data[row]![col]! };
    },
  },
  {
    key: 'qrcode-generator',
    pkg: 'qrcode-generator',
    call: "qrcode(0, 'M'); addData(url, 'Byte'); make()",
    encode: (url) => {
      const qr = qrcodeGenerator(0, 'M');
      qr.addData(url, 'Byte');
      qr.make();
      return qr;
    },
    symbol: (r) => {
      const qr = r as ReturnType<typeof qrcodeGenerator>;
      return { size: qr.getModuleCount(), dark: (row, col) => qr.isDark(row, col) };
    },
  },
  {
    key: 'nayuki',
    pkg: 'nayuki-qr-code-generator',
    call: 'QrCode.encodeSegments([makeBytes(bytes)], Ecc.MEDIUM, 1, 40, -1, false)  [no EC boost]',
    encode: (url) => nayuki.QrCode.encodeSegments([nayuki.QrSegment.makeBytes(bytesOf(url))], nayuki.QrCode.Ecc.MEDIUM, 1, 40, -1, false),
    symbol: (r) => {
      const qr = r as InstanceType<Nayuki['QrCode']>;
      return { size: qr.size, dark: (row, col) => qr.getModule(col, row) };
    },
  },
];

/** Paints a symbol black on white with a quiet zone and asks jsQR for its text. */
function decode(symbol: Symbol, border: number): string | null {
  const side = (symbol.size + 2 * border) * DECODE_SCALE;
  const data = new Uint8ClampedArray(side * side * 4).fill(255);
  for (let r = 0; r < symbol.size; r++) {
    for (let c = 0; c < symbol.size; c++) {
      if (!symbol.dark(r, c)) continue;
      for (let dy = 0; dy < DECODE_SCALE; dy++) {
        const y = (r + border) * DECODE_SCALE + dy;
        for (let dx = 0; dx < DECODE_SCALE; dx++) {
          const i = (y * side + (c + border) * DECODE_SCALE + dx) * 4;
          data[i] = data[i + 1] = data[i + 2] = 0;
        }
      }
    }
  }
  return jsQR(data, side, side)?.data ?? null;
}

interface Quality {
  /** Distinct symbol sizes seen (one expected: the size follows from the URL's length). */
  sizes: Set<number>;
  decoded: number;
  /** Symbols identical, module for module, to qrcode's for the same URL. */
  sameAsQrcode: number;
}

function quality(candidate: Candidate, urls: string[]): Quality {
  const sizes = new Set<number>();
  let decoded = 0;
  let sameAsQrcode = 0;
  const reference = CANDIDATES[0]!;
  for (const url of urls.slice(0, DECODED)) {
    const symbol = candidate.symbol(candidate.encode(url));
    sizes.add(symbol.size);
    // qr's defaults already include a 2-module border; give every symbol a 4-module quiet zone in all.
    const border = candidate.key === 'qr.defaults' ? DECODE_QUIET - 2 : DECODE_QUIET;
    if (decode(symbol, border) === url) decoded++;
    const ref = reference.symbol(reference.encode(url));
    if (ref.size === symbol.size && same(ref, symbol)) sameAsQrcode++;
  }
  return { sizes, decoded, sameAsQrcode };
}

function same(a: Symbol, b: Symbol): boolean {
  for (let r = 0; r < a.size; r++) for (let c = 0; c < a.size; c++) if (a.dark(r, c) !== b.dark(r, c)) return false;
  return true;
}

export const qrEncoders: Benchmark = {
  name: 'qr-encoders',
  description: 'QR encoders on npm, byte mode and EC M, for this service\'s signUrls: rate, symbol size, decodability by jsQR',
  async run(): Promise<BenchReport> {
    const idle = await backgroundLoad();
    const sets = URLS.map((u) => ({ ...u, urls: Array.from({ length: POOL }, () => `${u.base}${newCode(Date.now())}`) }));
    const specs: OperationSpec[] = [];
    for (const set of sets) {
      const at = (i: number): string => set.urls[i % POOL]!;
      for (const c of CANDIDATES) specs.push({ key: `${set.name}.${c.key}`, label: c.key, unit: 'matrix', op: (i) => c.encode(at(i)) });
      // tabwire's own wrapper (src/quicklogin/qr-matrix.ts), whatever library it uses now.
      specs.push({ key: `${set.name}.tabwire`, label: 'tabwire encodeQr', unit: 'matrix', op: (i) => encodeQr(at(i)) });
    }
    const measured = await measureInterleaved(specs, TIMING);
    const get = (key: string): Measurement => measured.find((m) => m.key === key)!;

    const sections = sets.map((set) => {
      const base = get(`${set.name}.qrcode`);
      const sample = set.urls[0]!;
      const rows = [...CANDIDATES.map((c) => ({ key: c.key, c })), { key: 'tabwire', c: undefined }].map(({ key, c }) => {
        const m = get(`${set.name}.${key}`);
        const q = c ? quality(c, set.urls) : undefined;
        const size = q ? [...q.sizes].join('/') : String(encodeQr(sample).size);
        const version = q ? [...q.sizes].map((s) => (key === 'qr.defaults' ? `${(s - 4 - 17) / 4}+border` : String((s - 17) / 4))).join('/') : String((encodeQr(sample).size - 17) / 4);
        return [
          c ? `${key} ${versionOf(c.pkg)}` : m.label,
          formatRate(m.rate),
          formatMicros(1e6 / m.rate),
          formatRatio(m.rate / base.rate),
          size,
          version,
          q ? `${q.decoded}/${DECODED}` : '',
          q ? `${q.sameAsQrcode}/${DECODED}` : '',
          `${(m.otherCpuPercent ?? 0).toFixed(0)}%`,
        ];
      });
      return {
        heading: `${set.name} signUrl ${sample} (${Buffer.byteLength(sample)} bytes): median of ${TIMING.rounds} interleaved ${TIMING.sliceMs} ms slices`,
        lines: table(['encoder', 'matrices/s', 'µs', 'vs qrcode', 'modules', 'version', 'jsQR decoded', 'same as qrcode', 'other'], rows),
      };
    });
    const cpu = cpus();
    return {
      title: qrEncoders.description,
      context: [
        `machine: ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), ${process.platform}/${process.arch}, Node ${process.version}`,
        `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
        ...CANDIDATES.filter((c) => c.key !== 'qr.defaults').map((c) => `${c.key}: ${c.call}`),
        `modules: symbol side without quiet zone (qr.defaults: as returned, with its 2-module border); 'same as qrcode': identical modules (mask choice included)`,
        `jsQR decoded: of ${DECODED} distinct URLs, drawn at ${DECODE_SCALE} px/module with a ${DECODE_QUIET}-module quiet zone, read back exactly`,
      ],
      sections: [
        ...sections,
        {
          heading: 'Notes',
          lines: measured.filter((m) => m.note).map((m) => `${m.key}: ${m.note}`),
        },
      ],
      measurements: measured,
      budgets: [],
    };
  },
};

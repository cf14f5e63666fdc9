import type { QrPalette } from './qr-colours.js';
import { encodeQr, qrSizeFor } from './qr-matrix.js';
import { pngSide, renderPng } from './qr-png.js';
import { textAnswerJson } from './qr-text.js';

export const QR_MODES = ['image', 'base64', 'text'] as const;
export type QrMode = (typeof QR_MODES)[number];
/** The modes whose answer carries the encoded symbol (`image` only names the PNG's URL). */
export type EncodedMode = Exclude<QrMode, 'image'>;

/** docs/signing.md: exactly these fields per mode. */
export type QrResponse =
  | { signUrl: string; src: string; width: number; height: number }
  | { signUrl: string; base64: string; contentType: 'image/png'; width: number; height: number }
  | { signUrl: string; text: string };

/**
 * An answer already serialised: JSON as UTF-8 bytes, sent as it is. `text` and `base64` answers are
 * made this way (`QrAnswers.encodedAnswer`), so the encoder thread can make them ahead (qr-stock.ts);
 * each has the fields of its QrResponse.
 */
export class SerializedJson {
  constructor(readonly bytes: Buffer) {}
}

/**
 * What a QR request answers for a code, and the PNG of `image` mode: every signUrl of a service is
 * `<publicBaseUrl>/QuickLogin/Sign/<code>`, drawn `modulePixels` to a module.
 */
export class QrAnswers {
  constructor(private readonly settings: { publicBaseUrl: string; modulePixels: number }) {}

  signUrl(code: string): string {
    return `${this.settings.publicBaseUrl}/QuickLogin/Sign/${code}`;
  }

  answer(mode: QrMode, code: string): QrResponse | SerializedJson {
    if (mode !== 'image') return new SerializedJson(this.encodedAnswer(mode, code));
    const signUrl = this.signUrl(code);
    // No encoding here: the size follows from the URL's length (qr-matrix.ts); the PNG is made on GET.
    const side = pngSide(qrSizeFor(signUrl), this.settings.modulePixels);
    // Absolute on the public base: existing pages put `src` into <img src> as given, so a relative
    // one would load from the page's own host (docs/signing.md "QR images").
    return { signUrl, src: `${this.settings.publicBaseUrl}/QuickLogin/Qr/${code}.png`, width: side, height: side };
  }

  /** The whole answer of a `text` or `base64` request for `code`, as JSON bytes. */
  encodedAnswer(mode: EncodedMode, code: string): Buffer {
    const signUrl = this.signUrl(code);
    const matrix = encodeQr(signUrl);
    if (mode === 'text') return textAnswerJson(signUrl, matrix);
    const side = pngSide(matrix.size, this.settings.modulePixels);
    const base64 = renderPng(matrix, this.settings.modulePixels).toString('base64');
    const answer: QrResponse = { signUrl, base64, contentType: 'image/png', width: side, height: side };
    return Buffer.from(JSON.stringify(answer));
  }

  /** The code's PNG (in `palette`, default black on white). */
  png(code: string, palette?: QrPalette): Buffer {
    return renderPng(encodeQr(this.signUrl(code)), this.settings.modulePixels, palette);
  }
}

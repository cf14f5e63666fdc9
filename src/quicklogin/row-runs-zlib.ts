/**
 * A zlib stream (RFC 1950, deflate RFC 1951) of an image made of row runs: each of `rows` (packed
 * pixel rows of `rowBytes` bytes, filter byte included) stands for `repeat` identical rows of the
 * image. A QR PNG is exactly that, one pixel row per module row drawn `modulePixels` times, so its
 * compression needs no search: a repeated row is one back-reference to the row above, a row equal to
 * the one before it is one too, and runs of equal bytes in a row are back-references at distance 1.
 * zlib's general search (and its ~256 KiB of state set up per call) cost half of a `base64`
 * answer's CPU for the same image; this writes one block with the fixed Huffman code (§3.2.6) and
 * computes the Adler-32 from the row sums, without looking at each repeated byte.
 */
export function zlibRowRuns(rows: Uint8Array, rowBytes: number, repeat: number): Buffer {
  const count = rows.length / rowBytes;
  // Literals take at most 9 bits; a back-reference (at most 31 bits) replaces at least 3 bytes of
  // the raw image, or a whole repeated row.
  const runRefs = Math.ceil((repeat * rowBytes) / MAX_MATCH) + 1;
  const out = new BitWriter(Buffer.allocUnsafe(6 + Math.ceil((rows.length * 9) / 8) + count * runRefs * 4 + 8));
  out.bytes(0x78, 0x01); // CMF: deflate, 32 KiB window; FLG: fastest, (CMF * 256 + FLG) % 31 === 0
  out.bits(0b011, 3); // BFINAL = 1, BTYPE = 01 (fixed Huffman codes)

  let s1 = 1;
  let s2 = 0;
  const imageRow = repeat * rowBytes;
  for (let r = 0; r < count; r++) {
    const start = r * rowBytes;
    const sameAsAbove = r > 0 && equalRows(rows, start - rowBytes, start, rowBytes);
    if (sameAsAbove) {
      out.copy(imageRow, rowBytes);
    } else {
      out.literalRow(rows, start, rowBytes);
      if (repeat > 1) out.copy(imageRow - rowBytes, rowBytes);
    }
    // Adler-32 of this row appended `repeat` times: s1 += sum; s2 += n * s1 + sum((n - i) * byte_i).
    let sum = 0;
    let weighted = 0;
    for (let i = 0; i < rowBytes; i++) {
      const byte = rows[start + i]!;
      sum += byte;
      weighted += (rowBytes - i) * byte;
    }
    sum %= ADLER_MOD;
    weighted %= ADLER_MOD;
    for (let k = 0; k < repeat; k++) {
      s2 = (s2 + rowBytes * s1 + weighted) % ADLER_MOD;
      s1 = (s1 + sum) % ADLER_MOD;
    }
  }
  out.code(END_OF_BLOCK);
  out.flush();
  out.bytes(s2 >>> 8, s2 & 0xff, s1 >>> 8, s1 & 0xff); // Adler-32, big-endian
  return out.done();
}

const ADLER_MOD = 65521;
const MIN_MATCH = 3;
const MAX_MATCH = 258;
const END_OF_BLOCK = 256;

function equalRows(rows: Uint8Array, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (rows[a + i] !== rows[b + i]) return false;
  return true;
}

const reverse = (code: number, length: number): number => {
  let reversed = 0;
  for (let i = 0; i < length; i++) reversed |= ((code >>> i) & 1) << (length - 1 - i);
  return reversed;
};

/** Fixed literal/length code (RFC 1951 §3.2.6), bit-reversed for LSB-first writing: [bits, length] per symbol. */
const { bits: FIXED_BITS, lengths: FIXED_LENGTHS } = (() => {
  const bits = new Uint16Array(288);
  const lengths = new Uint8Array(288);
  for (let s = 0; s < 288; s++) {
    const [base, first, length] = s < 144 ? [0x30, 0, 8] : s < 256 ? [0x190, 144, 9] : s < 280 ? [0, 256, 7] : [0xc0, 280, 8];
    bits[s] = reverse(base + s - first, length);
    lengths[s] = length;
  }
  return { bits, lengths };
})();

/** Length codes 257..285 (§3.2.5): base length and extra bits. */
const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/** Distance codes 0..29 (§3.2.5): base distance and extra bits. */
const DISTANCE_BASE = [
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/** The last code whose base is <= value. */
const codeFor = (bases: readonly number[], value: number): number => {
  let code = bases.length - 1;
  while (bases[code]! > value) code--;
  return code;
};

/** Writes bits LSB-first (§3.1.1). Every write is at most 18 bits, so the accumulator stays within 32. */
class BitWriter {
  private at = 0;
  private acc = 0;
  private held = 0;

  constructor(private readonly buffer: Buffer) {}

  bytes(...values: number[]): void {
    for (const v of values) this.buffer[this.at++] = v;
  }

  bits(value: number, length: number): void {
    let acc = this.acc | (value << this.held);
    let held = this.held + length;
    let at = this.at;
    const buffer = this.buffer;
    while (held >= 8) {
      buffer[at++] = acc & 0xff;
      acc >>>= 8;
      held -= 8;
    }
    this.acc = acc;
    this.held = held;
    this.at = at;
  }

  code(symbol: number): void {
    this.bits(FIXED_BITS[symbol]!, FIXED_LENGTHS[symbol]!);
  }

  /** Literals, with runs of 4 or more equal bytes as one literal and a back-reference at distance 1. */
  literalRow(rows: Uint8Array, start: number, length: number): void {
    const end = start + length;
    let i = start;
    while (i < end) {
      const byte = rows[i]!;
      let run = 1;
      while (i + run < end && rows[i + run] === byte) run++;
      if (run > MIN_MATCH) {
        this.code(byte);
        this.copy(run - 1, 1);
      } else {
        for (let k = 0; k < run; k++) this.code(byte);
      }
      i += run;
    }
  }

  /** `length` bytes copied from `distance` back, as back-references of at most 258 bytes. */
  copy(length: number, distance: number): void {
    let left = length;
    while (left > 0) {
      // Never leave a remainder shorter than a back-reference can be.
      const take = left <= MAX_MATCH ? left : Math.min(MAX_MATCH, left - MIN_MATCH);
      if (take < MIN_MATCH) throw new RangeError(`back-reference of ${take} bytes`);
      this.reference(take, distance);
      left -= take;
    }
  }

  private reference(length: number, distance: number): void {
    const lengthCode = codeFor(LENGTH_BASE, length);
    this.code(257 + lengthCode);
    if (LENGTH_EXTRA[lengthCode]! > 0) this.bits(length - LENGTH_BASE[lengthCode]!, LENGTH_EXTRA[lengthCode]!);
    const distanceCode = codeFor(DISTANCE_BASE, distance);
    this.bits(reverse(distanceCode, 5), 5);
    if (DISTANCE_EXTRA[distanceCode]! > 0) this.bits(distance - DISTANCE_BASE[distanceCode]!, DISTANCE_EXTRA[distanceCode]!);
  }

  /** Pads the last byte with zero bits. */
  flush(): void {
    if (this.held > 0) this.buffer[this.at++] = this.acc & 0xff;
    this.acc = 0;
    this.held = 0;
  }

  done(): Buffer {
    return this.buffer.subarray(0, this.at);
  }
}

import { el, text } from './dom.js';
import { decodeFrame, decodeImage } from './qr.js';

/** How often a camera frame is looked at for a QR code. */
const FRAME_INTERVAL_MS = 200;

/**
 * Reads a request's QR code with the camera or from an image (docs/wallet.md), and hands its text to
 * `open`. The camera runs until a code is read or it is stopped; `failed` shows what went wrong.
 */
export class Scanner {
  private stream: MediaStream | undefined;

  constructor(
    private readonly open: (text: string) => Promise<void>,
    private readonly failed: (message: string) => void,
  ) {}

  get running(): boolean {
    return this.stream !== undefined;
  }

  stop(): void {
    this.stream?.getTracks().forEach((t) => t.stop());
    this.stream = undefined;
    const video = el<HTMLVideoElement>('camera');
    video.srcObject = null;
    video.hidden = true;
    el('scan').setAttribute('aria-pressed', 'false');
    text('scan', 'Scan with the camera');
  }

  async start(): Promise<void> {
    if (!navigator.mediaDevices?.getUserMedia) throw new Error('This browser offers no camera to pages (it needs https). Paste the link or read an image instead.');
    this.stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
    const video = el<HTMLVideoElement>('camera');
    video.srcObject = this.stream;
    video.hidden = false;
    el('scan').setAttribute('aria-pressed', 'true');
    text('scan', 'Stop the camera');
    text('scan-status', 'Point the camera at the QR code.');
    await video.play();
    const canvas = document.createElement('canvas');
    const tick = async (): Promise<void> => {
      if (!this.stream) return;
      const found = await decodeFrame(video, canvas).catch(() => undefined);
      if (found) {
        this.stop();
        text('scan-status', 'Code read.');
        await this.open(found).catch((err: unknown) => this.failed(err instanceof Error ? err.message : String(err)));
        return;
      }
      setTimeout(() => void tick(), FRAME_INTERVAL_MS);
    };
    void tick();
  }

  async readImage(file: File): Promise<void> {
    text('scan-status', 'Reading the image…');
    const found = await decodeImage(file);
    if (!found) {
      text('scan-status', '');
      throw new Error('No QR code could be read from that image.');
    }
    text('scan-status', 'Code read.');
    el<HTMLInputElement>('sign-url').value = found;
    await this.open(found);
  }
}

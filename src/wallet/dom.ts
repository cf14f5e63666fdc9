/** Small DOM helpers. Everything from the wire goes into the page as text (textContent), never as HTML. */
import { toBase64 } from './encoding.js';

export function el<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} is missing from the page`);
  return found as T;
}

export function text(id: string, value: string): void {
  el(id).textContent = value;
}

export function shown(id: string, visible: boolean): void {
  el(id).hidden = !visible;
}

export function item(tag: 'li' | 'dt' | 'dd', value: string): HTMLElement {
  const node = document.createElement(tag);
  node.textContent = value;
  return node;
}

/** A Unix-seconds time as local date and time, with the machine-readable value in `datetime`. */
export function time(id: string, seconds: number): void {
  const node = el<HTMLTimeElement>(id);
  const date = new Date(seconds * 1000);
  node.dateTime = date.toISOString();
  node.textContent = date.toLocaleString();
}

/** A chosen file's bytes as base64 (an identity application's attachment). */
export function fileAsBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(toBase64(new Uint8Array(reader.result as ArrayBuffer)));
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read'));
    reader.readAsArrayBuffer(file);
  });
}

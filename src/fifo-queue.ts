/**
 * A first-in first-out queue whose `shift` is O(1): `Array.prototype.shift` moves every remaining item,
 * which makes draining a queue of thousands O(n²). Items are read from `head` on, and the array is cut
 * back once most of it has been read.
 */
export class FifoQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, left in the queue; undefined when empty. */
  peek(): T | undefined {
    return this.head === this.items.length ? undefined : this.items[this.head];
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * The wallet's storage: one IndexedDB database (`tabwire-wallet`, object store `wallet`). CryptoKey
 * objects are structured-cloneable, so the non-extractable key pair is stored as it is: the browser
 * keeps the private key material and never hands it to script (WebCrypto §14.3.1, [[extractable]]).
 */
export const DB_NAME = 'tabwire-wallet';
const STORE = 'wallet';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB could not be opened'));
  });
}

async function run<T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const request = work(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(request.result as T);
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    });
  } finally {
    db.close();
  }
}

export const load = <T>(key: string): Promise<T | undefined> => run<T | undefined>('readonly', (s) => s.get(key));
export const save = (key: string, value: unknown): Promise<void> => run<unknown>('readwrite', (s) => s.put(value, key)).then(() => undefined);
export const clearAll = (): Promise<void> => run<unknown>('readwrite', (s) => s.clear()).then(() => undefined);

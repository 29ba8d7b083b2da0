import type { ProxyScheme } from "@roost/net";

const SCHEMES: readonly (ProxyScheme | null)[] = [null, "http", "https", "socks4", "socks5"];
const SCHEME_CODES: Readonly<Record<ProxyScheme, number>> = { http: 1, https: 2, socks4: 3, socks5: 4 };

const INITIAL_CAPACITY = 1 << 16;

/** A 32-bit hash of a string (FNV-1a over UTF-16 code units). */
function hashText(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** 0 for no credentials, else a hash of both. */
function credentialsHash(username: string, password: string): number {
  return username === "" && password === "" ? 0 : hashText(password, hashText(username, 0x811c9dc5) ^ 0x5bd1e995);
}

/** Mixes an address and a port (and a credentials hash) into a table position. */
function mix(ip: number, port: number, extra: number): number {
  let h = Math.imul(ip ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(port + 0x632be5ab, 0xc2b2ae35) ^ extra;
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return h ^ (h >>> 13);
}

/**
 * The distinct proxies of one upload, numbered 0, 1, 2, ... in the order
 * they first appear, with what the upload keeps per proxy: identity
 * (address, port, credentials), the scheme of its first line, how many
 * lines named it, and whether it was refused as blacklisted.
 *
 * An open-addressing table over typed arrays: an upload of a million lines
 * needs no per-line objects here (a JS Set would hold a boxed number or a
 * string per proxy and rehash them as it grows), which is most of the
 * garbage collection an upload used to cost. Proxies without credentials
 * (most of them) keep no string at all.
 */
export class UploadIdentities {
  private slots = new Int32Array(INITIAL_CAPACITY);
  private mask = INITIAL_CAPACITY - 1;
  private ips = new Uint32Array(INITIAL_CAPACITY / 2);
  private ports = new Uint16Array(INITIAL_CAPACITY / 2);
  private schemes = new Uint8Array(INITIAL_CAPACITY / 2);
  private lineCounts = new Int32Array(INITIAL_CAPACITY / 2);
  private refusals = new Uint8Array(INITIAL_CAPACITY / 2);
  /** Credentials by proxy number; empty strings for proxies without them. */
  private readonly usernames: string[] = [];
  private readonly passwords: string[] = [];
  private count = 0;

  /** How many distinct proxies were added. */
  get size(): number {
    return this.count;
  }

  /**
   * The number of this proxy: an existing one (its line count goes up) or,
   * the first time it is seen, the next number as `-(n + 1)`.
   */
  add(ip: number, port: number, username: string, password: string, scheme: ProxyScheme | null): number {
    let at = mix(ip, port, credentialsHash(username, password)) & this.mask;
    for (;;) {
      const slot = this.slots[at] ?? 0;
      if (slot === 0) break;
      const n = slot - 1;
      if (this.ips[n] === ip && this.ports[n] === port && this.usernames[n] === username && this.passwords[n] === password) {
        this.lineCounts[n] = (this.lineCounts[n] ?? 0) + 1;
        return n;
      }
      at = (at + 1) & this.mask;
    }
    const n = this.count++;
    if (n === this.ips.length) this.growRows();
    this.ips[n] = ip;
    this.ports[n] = port;
    this.schemes[n] = scheme === null ? 0 : SCHEME_CODES[scheme];
    this.lineCounts[n] = 1;
    this.usernames.push(username);
    this.passwords.push(password);
    this.slots[at] = n + 1;
    // At most half full, so probes stay short.
    if (this.count * 2 > this.slots.length) this.rehash();
    return -(n + 1);
  }

  ip(n: number): number {
    return this.ips[n] ?? 0;
  }

  port(n: number): number {
    return this.ports[n] ?? 0;
  }

  username(n: number): string {
    return this.usernames[n] ?? "";
  }

  password(n: number): string {
    return this.passwords[n] ?? "";
  }

  scheme(n: number): ProxyScheme | null {
    return SCHEMES[this.schemes[n] ?? 0] ?? null;
  }

  /** Lines of the upload that named this proxy so far. */
  lines(n: number): number {
    return this.lineCounts[n] ?? 0;
  }

  refused(n: number): boolean {
    return this.refusals[n] === 1;
  }

  refuse(n: number): void {
    this.refusals[n] = 1;
  }

  private growRows(): void {
    const size = this.ips.length * 2;
    const grow = <T extends Uint32Array | Uint16Array | Uint8Array | Int32Array>(old: T, next: T): T => {
      next.set(old);
      return next;
    };
    this.ips = grow(this.ips, new Uint32Array(size));
    this.ports = grow(this.ports, new Uint16Array(size));
    this.schemes = grow(this.schemes, new Uint8Array(size));
    this.lineCounts = grow(this.lineCounts, new Int32Array(size));
    this.refusals = grow(this.refusals, new Uint8Array(size));
  }

  private rehash(): void {
    const capacity = this.slots.length * 2;
    const slots = new Int32Array(capacity);
    const mask = capacity - 1;
    for (let n = 0; n < this.count; n++) {
      let at = mix(this.ips[n] ?? 0, this.ports[n] ?? 0, credentialsHash(this.usernames[n] ?? "", this.passwords[n] ?? "")) & mask;
      while (slots[at] !== 0) at = (at + 1) & mask;
      slots[at] = n + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

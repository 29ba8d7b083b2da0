import type { ProxyScheme } from "@roost/net";

const SCHEMES: readonly (ProxyScheme | null)[] = [null, "http", "https", "socks4", "socks5"];
const SCHEME_CODES: Readonly<Record<ProxyScheme, number>> = { http: 1, https: 2, socks4: 3, socks5: 4 };

const INITIAL_CAPACITY = 1 << 16;

/** `x` rotated left by `bits` within 32 bits. */
const rotl = (x: number, bits: number): number => (x << bits) | (x >>> (32 - bits));

/**
 * HalfSipHash-1-3 under a random 64-bit key: an uploader cannot pick lines that all land on one slot and make
 * every insert probe past the earlier ones, blocking the event loop. Written for the table's keys: words go in
 * one at a time and the state lives in the object, so hashing allocates nothing.
 */
class KeyedHash {
  private v0 = 0;
  private v1 = 0;
  private v2 = 0;
  private v3 = 0;
  private words = 0;
  private readonly k0: number;
  private readonly k1: number;

  constructor() {
    const key = crypto.getRandomValues(new Uint32Array(2));
    this.k0 = key[0] ?? 0;
    this.k1 = key[1] ?? 0;
  }

  start(): void {
    this.v0 = this.k0;
    this.v1 = this.k1;
    this.v2 = 0x6c796765 ^ this.k0;
    this.v3 = 0x74656462 ^ this.k1;
    this.words = 0;
  }

  word(m: number): void {
    this.v3 ^= m;
    this.round();
    this.v0 ^= m;
    this.words++;
  }

  /** The UTF-16 code units of `text`, two to a word, after its length. */
  text(text: string): void {
    this.word(text.length);
    let i = 0;
    for (; i + 1 < text.length; i += 2) this.word(text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16));
    if (i < text.length) this.word(text.charCodeAt(i));
  }

  finish(): number {
    const b = (this.words * 4) << 24;
    this.v3 ^= b;
    this.round();
    this.v0 ^= b;
    this.v2 ^= 0xff;
    this.round();
    this.round();
    this.round();
    return this.v1 ^ this.v3;
  }

  private round(): void {
    let { v0, v1, v2, v3 } = this;
    v0 = (v0 + v1) | 0;
    v1 = rotl(v1, 5) ^ v0;
    v0 = rotl(v0, 16);
    v2 = (v2 + v3) | 0;
    v3 = rotl(v3, 8) ^ v2;
    v0 = (v0 + v3) | 0;
    v3 = rotl(v3, 7) ^ v0;
    v2 = (v2 + v1) | 0;
    v1 = rotl(v1, 13) ^ v2;
    v2 = rotl(v2, 16);
    this.v0 = v0;
    this.v1 = v1;
    this.v2 = v2;
    this.v3 = v3;
  }
}

/**
 * The distinct proxies of one upload, numbered 0, 1, 2, ... in first-seen order, with identity, first line's scheme,
 * line count and blacklist refusal. An open-addressing table over typed arrays, so large uploads make no per-line
 * objects; proxies without credentials keep no string, and each keeps its KeyedHash so growing needs no rehashing.
 */
export class UploadIdentities {
  private slots = new Int32Array(INITIAL_CAPACITY);
  private mask = INITIAL_CAPACITY - 1;
  private ips = new Uint32Array(INITIAL_CAPACITY / 2);
  private ports = new Uint16Array(INITIAL_CAPACITY / 2);
  private schemes = new Uint8Array(INITIAL_CAPACITY / 2);
  private lineCounts = new Int32Array(INITIAL_CAPACITY / 2);
  private refusals = new Uint8Array(INITIAL_CAPACITY / 2);
  private hashes = new Int32Array(INITIAL_CAPACITY / 2);
  private readonly hash = new KeyedHash();
  /** Credentials by proxy number; empty strings for proxies without them. */
  private readonly usernames: string[] = [];
  private readonly passwords: string[] = [];
  private count = 0;
  private probeRecord = 0;

  /** The most slots one add() looked at past its first: small whatever the upload holds (tests). */
  get longestProbe(): number {
    return this.probeRecord;
  }

  /** How many distinct proxies were added. */
  get size(): number {
    return this.count;
  }

  /**
   * The number of this proxy: an existing one (its line count goes up) or,
   * the first time it is seen, the next number as `-(n + 1)`.
   */
  add(ip: number, port: number, username: string, password: string, scheme: ProxyScheme | null): number {
    const hash = this.hashOf(ip, port, username, password);
    let at = hash & this.mask;
    for (let probe = 0; ; probe++) {
      const slot = this.slots[at] ?? 0;
      if (slot === 0) {
        if (probe > this.probeRecord) this.probeRecord = probe;
        break;
      }
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
    this.hashes[n] = hash;
    this.usernames.push(username);
    this.passwords.push(password);
    this.slots[at] = n + 1;
    // At most half full, so probes stay short.
    if (this.count * 2 > this.slots.length) this.rehash();
    return -(n + 1);
  }

  /** The keyed hash of an identity: address and port, then (flagged above the port's 16 bits) the credentials. */
  private hashOf(ip: number, port: number, username: string, password: string): number {
    const hash = this.hash;
    hash.start();
    hash.word(ip);
    if (username === "" && password === "") {
      hash.word(port);
    } else {
      hash.word(port | 0x10000);
      hash.text(username);
      hash.text(password);
    }
    return hash.finish();
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
    this.hashes = grow(this.hashes, new Int32Array(size));
  }

  private rehash(): void {
    const capacity = this.slots.length * 2;
    const slots = new Int32Array(capacity);
    const mask = capacity - 1;
    for (let n = 0; n < this.count; n++) {
      let at = (this.hashes[n] ?? 0) & mask;
      while (slots[at] !== 0) at = (at + 1) & mask;
      slots[at] = n + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

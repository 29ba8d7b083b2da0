import { promises as dns } from "node:dns";

import { OutboundBlockedError, OutboundUnresolvedError } from "./outbound-errors.js";
import { classifyAddress, type AddressClass } from "./reserved-ranges.js";

/** Resolves a name to every address it has (the guard checks them all). */
export type ResolveAll = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export interface OutboundGuardOptions {
  /**
   * ALLOW_PRIVATE_NETWORK_TARGETS, as the service read it: every address
   * passes. Names are still resolved once and the connection goes to that address.
   * @defaultValue false
   */
  allowPrivateNetworkTargets?: boolean;
  /**
   * Test-only exception: a reserved address for which this returns true
   * passes. Lets a test keep the guard on while its own servers live on
   * loopback. Services never set it.
   */
  allowAddress?: (address: AddressClass) => boolean;
  /** Resolver; defaults to the system resolver (`dns.lookup`, every address). */
  resolveAll?: ResolveAll;
}

/** A destination that passed the guard: connect to `address`, never to `host` again. */
export interface CheckedTarget {
  /** The host as given (name or literal); used for Host headers and TLS SNI. */
  host: string;
  /** The checked address, canonical form. */
  address: string;
  family: 4 | 6;
  /** True when `host` was an IP literal (then it is not a TLS server name). */
  literal: boolean;
}

const systemResolveAll: ResolveAll = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * The one outbound guard: every connection Roost opens to a judge, IP lookup,
 * scrape source, blacklist or GeoLite download, and every proxy it dials,
 * first passes `resolve` and then connects to the address it returned.
 */
export class OutboundGuard {
  readonly allowPrivateNetworkTargets: boolean;
  readonly #allowAddress: ((address: AddressClass) => boolean) | undefined;
  readonly #resolveAll: ResolveAll;

  constructor(options: OutboundGuardOptions = {}) {
    this.allowPrivateNetworkTargets = options.allowPrivateNetworkTargets ?? false;
    this.#allowAddress = options.allowAddress;
    this.#resolveAll = options.resolveAll ?? systemResolveAll;
  }

  /**
   * Checks an IP literal without any lookup; returns null when `host` is not
   * an IP literal. Throws OutboundBlockedError for a refused address.
   */
  checkLiteral(host: string): CheckedTarget | null {
    const verdict = classifyAddress(host);
    if (!verdict) return null;
    this.#enforce(host, verdict);
    return { host, address: verdict.address, family: verdict.family, literal: true };
  }

  /**
   * Resolves `host` (a name or a literal in any numeric form) and checks every
   * address it resolves to; one refused address refuses the host, so a name
   * cannot hide a private address among public ones.
   */
  async resolve(host: string): Promise<CheckedTarget> {
    const literal = this.checkLiteral(host);
    if (literal) return literal;
    let found: readonly { address: string; family: number }[];
    try {
      found = await this.#resolveAll(host);
    } catch (error) {
      throw new OutboundUnresolvedError(host, { cause: error });
    }
    let first: CheckedTarget | undefined;
    for (const { address } of found) {
      const verdict = classifyAddress(address);
      if (!verdict) continue;
      this.#enforce(host, verdict);
      first ??= { host, address: verdict.address, family: verdict.family, literal: false };
    }
    if (!first) throw new OutboundUnresolvedError(host);
    return first;
  }

  #enforce(host: string, verdict: AddressClass): void {
    if (verdict.reserved === null || this.allowPrivateNetworkTargets) return;
    if (this.#allowAddress?.(verdict)) return;
    throw new OutboundBlockedError(host, verdict.address, verdict.reserved);
  }
}

import { guardedGet, OutboundBlockedError, type OutboundGuard } from "@roost/net";
import robotsParserModule from "robots-parser";

type RobotsParser = typeof robotsParserModule.default;
// A CommonJS module without __esModule: Node's default import is the function itself, while its types describe `.default`.
const loaded: unknown = robotsParserModule;
const robotsParser = (typeof loaded === "function" ? loaded : robotsParserModule.default) as RobotsParser;

/**
 * One user agent for robots.txt and list fetches alike: `Roost/<version>
 * (+<project URL>)` when the operator set SCRAPER_PROJECT_URL, else just
 * `Roost/<version>`; naming a page the operator did not choose would point
 * site owners at somebody else.
 */
export function scraperUserAgent(version: string, projectUrl?: string): string {
  return projectUrl === undefined || projectUrl === "" ? `Roost/${version}` : `Roost/${version} (+${projectUrl})`;
}

export interface RobotsVerdict {
  allowed: boolean;
  /** A robots.txt answered 2xx. */
  robotsFound: boolean;
  /** Why robots.txt could not be read (then `allowed` is false); null otherwise. */
  error: string | null;
  /** The guard refused the host: the source itself would be refused too. */
  blocked: boolean;
}

interface RobotsFile {
  isAllowed(url: string, ua?: string): boolean | undefined;
}

interface CachedRobots {
  robots: RobotsFile | null;
  error: string | null;
  blocked: boolean;
  expiresAt: number;
}

export interface RobotsCacheOptions {
  guard: OutboundGuard;
  userAgent: string;
  timeoutMs: number;
  /** How long one host's answer is reused, in ms; default 1 hour. */
  ttlMs?: number;
  /** robots.txt bodies are cut here; RFC 9309 asks for at least 500 KiB. */
  maxBytes?: number;
  /** Hosts remembered at once; the oldest is forgotten first. Default 1000. */
  maxHosts?: number;
  now?: () => number;
}

/**
 * robots.txt per origin (RFC 9309), fetched through the outbound guard with
 * the scraper's own user agent and kept for `ttlMs`. A 4xx means no rules;
 * a 5xx or an unreachable file means "disallow everything" until it answers.
 */
export class RobotsCache {
  readonly #options: RobotsCacheOptions;
  readonly #byOrigin = new Map<string, CachedRobots>();
  /** Fetches under way, so concurrent checks of one origin share one request. */
  readonly #pending = new Map<string, Promise<CachedRobots>>();

  constructor(options: RobotsCacheOptions) {
    this.#options = options;
  }

  async check(url: string): Promise<RobotsVerdict> {
    const target = new URL(url);
    const entry = await this.#robotsOf(target.origin);
    if (entry.blocked) return { allowed: false, robotsFound: false, error: entry.error, blocked: true };
    if (entry.error !== null) return { allowed: false, robotsFound: false, error: entry.error, blocked: false };
    if (entry.robots === null) return { allowed: true, robotsFound: false, error: null, blocked: false };
    return { allowed: entry.robots.isAllowed(target.href, this.#options.userAgent) ?? true, robotsFound: true, error: null, blocked: false };
  }

  async #robotsOf(origin: string): Promise<CachedRobots> {
    const now = (this.#options.now ?? Date.now)();
    const cached = this.#byOrigin.get(origin);
    if (cached && cached.expiresAt > now) return cached;
    let pending = this.#pending.get(origin);
    if (!pending) {
      pending = this.#load(origin, now).finally(() => this.#pending.delete(origin));
      this.#pending.set(origin, pending);
    }
    return pending;
  }

  async #load(origin: string, now: number): Promise<CachedRobots> {
    const ttlMs = this.#options.ttlMs ?? 3_600_000;
    const fetched = await this.#fetch(origin, now + ttlMs);
    // A failure is retried within a minute: an unreachable file must not disallow a host for the whole hour.
    const entry = fetched.error === null ? fetched : { ...fetched, expiresAt: now + Math.min(ttlMs, 60_000) };
    this.#byOrigin.delete(origin);
    this.#byOrigin.set(origin, entry);
    const maxHosts = this.#options.maxHosts ?? 1000;
    for (const key of this.#byOrigin.keys()) {
      if (this.#byOrigin.size <= maxHosts) break;
      this.#byOrigin.delete(key);
    }
    return entry;
  }

  async #fetch(origin: string, expiresAt: number): Promise<CachedRobots> {
    const robotsUrl = `${origin}/robots.txt`;
    try {
      const response = await guardedGet(this.#options.guard, robotsUrl, {
        timeoutMs: this.#options.timeoutMs,
        maxBytes: this.#options.maxBytes ?? 512 * 1024,
        headers: { "user-agent": this.#options.userAgent, accept: "text/plain, */*;q=0.5" },
      });
      if (response.status >= 200 && response.status < 300) {
        return { robots: robotsParser(response.url, response.body.toString("utf8")), error: null, blocked: false, expiresAt };
      }
      if (response.status >= 400 && response.status < 500) return { robots: null, error: null, blocked: false, expiresAt };
      return { robots: null, error: `robots.txt answered HTTP ${response.status}`, blocked: false, expiresAt };
    } catch (error) {
      const blocked = error instanceof OutboundBlockedError;
      return { robots: null, error: `robots.txt unreachable: ${messageOf(error)}`, blocked, expiresAt };
    }
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

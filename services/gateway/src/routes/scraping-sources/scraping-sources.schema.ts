import { z } from "zod";

/** Multipart fields that carry source URLs, one per line (contract: POST /api/scrapingSources). */
export const SOURCE_TEXT_FIELDS = ["scrapeSourceTextarea", "clipboardScrapeSources"] as const;

/** Longest source URL kept; longer lines are unsafe (no list lives behind an 8 KiB URL). */
export const MAX_SOURCE_URL_LENGTH = 2048;
/** Most source lines one request may hold. */
export const MAX_SOURCES_PER_REQUEST = 10_000;
export const DEFAULT_SOURCE_PAGE_SIZE = 20;
export const MAX_SOURCE_PAGE_SIZE = 100;
const MAX_ID = 2_147_483_647;

export interface SourceLines {
  /** Normalised http(s) URLs (WHATWG serialisation), distinct, in first-seen order. */
  urls: string[];
  /** Lines that are not http(s) URLs or carry userinfo, as written. */
  unsafe: string[];
}

/**
 * Reads submitted text as one source per line: blank lines and `#` comments
 * are skipped; a line is kept when it is an http(s) URL without userinfo.
 */
export function parseSourceLines(texts: readonly string[]): SourceLines {
  const urls = new Set<string>();
  const unsafe = new Set<string>();
  for (const text of texts) {
    for (const raw of text.split(/\r?\n|\r/)) {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) continue;
      const url = httpUrlOf(line);
      if (url === null) unsafe.add(line.slice(0, MAX_SOURCE_URL_LENGTH));
      else urls.add(url);
    }
  }
  return { urls: [...urls], unsafe: [...unsafe] };
}

function httpUrlOf(line: string): string | null {
  if (line.length > MAX_SOURCE_URL_LENGTH || /\s/.test(line)) return null;
  let url: URL;
  try {
    url = new URL(line);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  const authority = line.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "").split(/[/?#\\]/)[0] ?? "";
  if (url.username !== "" || url.password !== "" || authority.includes("@")) return null;
  url.hash = "";
  return url.href;
}

export const deleteSourcesSchema = z.array(z.number().int().positive().max(MAX_ID)).max(100_000);

export function sourceIdOf(raw: unknown): number | null {
  if (typeof raw !== "string" || !/^\d{1,10}$/.test(raw)) return null;
  const id = Number(raw);
  return id >= 1 && id <= MAX_ID ? id : null;
}

/** `pageSize` of the source list: default 20, a positive integer up to 100. */
export function sourcePageSizeOf(raw: unknown): number | null {
  if (raw === undefined) return DEFAULT_SOURCE_PAGE_SIZE;
  if (typeof raw !== "string" || !/^\d{1,6}$/.test(raw) || Number(raw) < 1) return null;
  return Math.min(Number(raw), MAX_SOURCE_PAGE_SIZE);
}

export function searchOf(raw: unknown): string | null | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || raw.length > 2048) return null;
  return raw;
}

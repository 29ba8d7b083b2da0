import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { extractProxyLines } from "@roost/scraping";
import { cpuTimes } from "./host.js";
import { finishReport, load, out, runPart, type Verdict } from "./report.js";
import { scraperBenchConfigFromProcess, type ScraperBenchConfig } from "./scraper-bench.config.js";

/**
 * `npm run bench -- --part=scraper`: the scraper's extraction (`extractProxyLines`, as a fetched body
 * reaches it) beside one plain regex pass over the same bytes, on a generated HTML table page and a
 * text list, in the same run (docs/benchmarks.md "Scraper"). No database or Redis.
 */

const TARGETS = {
  /** Roost's proxies/s over the regex pass's, each input. */
  roostOverRegex: 0.5,
};

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const int = (n: number): string => Math.round(n).toLocaleString("en");
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

/** A fixed pseudo-random sequence in [0, 1), the same in every run (mulberry32: 32-bit integer steps, no float overflow). */
function random32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Distinct public-looking addresses with ports, in a fixed order. */
function proxyStream(seed: number): () => { ip: string; port: number } {
  const random = random32(seed);
  const seen = new Set<string>();
  const ports = [80, 8080, 3128, 1080, 8000, 8888, 9050, 4145, 3129, 999];
  return () => {
    for (;;) {
      const ip = `${1 + Math.floor(random() * 222)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${1 + Math.floor(random() * 254)}`;
      const port = random() < 0.7 ? (ports[Math.floor(random() * ports.length)] ?? 80) : 1 + Math.floor(random() * 65535);
      const key = `${ip}:${port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      return { ip, port };
    }
  };
}

const COUNTRIES = [
  ["US", "United States"],
  ["DE", "Germany"],
  ["BR", "Brazil"],
  ["ID", "Indonesia"],
  ["RU", "Russian Federation"],
  ["FR", "France"],
  ["IN", "India"],
  ["JP", "Japan"],
] as const;
const ANONYMITY = ["elite proxy", "anonymous", "transparent"] as const;

/**
 * A proxy list site's page: head with styles and a script, a nav, a table of
 * rows `ip | port | code | country | anonymity | google | https | last checked`,
 * a footer; about `bytes` long.
 */
function htmlTablePage(bytes: number): { body: Buffer; rows: number } {
  const next = proxyStream(7);
  const random = random32(11);
  const parts: string[] = [
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Free Proxy List - Updated every 10 minutes</title>\n",
    "<style>.table td{padding:4px 8px}.hm{display:none}@media(min-width:768px){.hm{display:table-cell}}</style>\n",
    "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());var probe='10.0.0.1:80';</script>\n",
    "</head><body><nav class=\"navbar\"><a href=\"/\">Home</a> <a href=\"/socks\">SOCKS proxies</a> <a href=\"/ssl\">SSL proxies</a></nav>\n",
    "<section><h1>Free Proxy List</h1><p>Free proxies that are just checked and updated every 10 minutes.</p>\n",
    '<div class="table-responsive"><table class="table table-striped table-bordered"><thead><tr><th>IP Address</th><th>Port</th><th>Code</th>',
    '<th class="hm">Country</th><th>Anonymity</th><th class="hm">Google</th><th class="hx">Https</th><th class="hm">Last Checked</th></tr></thead><tbody>\n',
  ];
  const footer = '</tbody></table></div></section>\n<footer><p>&copy; 2026 Free Proxy List. <a href="/terms">Terms</a></p></footer></body></html>\n';
  let size = parts.reduce((sum, part) => sum + part.length, footer.length);
  let rows = 0;
  while (size < bytes) {
    const { ip, port } = next();
    const [code, country] = COUNTRIES[Math.floor(random() * COUNTRIES.length)] ?? COUNTRIES[0];
    const row =
      `<tr><td>${ip}</td><td>${port}</td><td>${code}</td><td class="hm">${country}</td><td>${ANONYMITY[Math.floor(random() * ANONYMITY.length)] ?? ""}</td>` +
      `<td class="hm">${random() < 0.2 ? "yes" : "no"}</td><td class="hx">${random() < 0.5 ? "yes" : "no"}</td><td class="hm">${1 + Math.floor(random() * 59)} mins ago</td></tr>\n`;
    parts.push(row);
    size += row.length;
    rows += 1;
  }
  parts.push(footer);
  return { body: Buffer.from(parts.join(""), "utf8"), rows };
}

/**
 * A text list: mostly `ip:port`, with credentials (`ip:port:user:pass`,
 * `user:pass@ip:port`), scheme lines, comments and blank lines between.
 */
function textList(bytes: number): { body: Buffer; proxies: number } {
  const next = proxyStream(13);
  const random = random32(17);
  const lines: string[] = ["# Proxy list, updated 2026-11-26 10:00 UTC", "# format: ip:port, one per line", ""];
  let size = lines.reduce((sum, line) => sum + line.length + 1, 0);
  let proxies = 0;
  while (size < bytes) {
    const roll = random();
    let line: string;
    if (roll < 0.02) line = `# checked ${1 + Math.floor(random() * 59)} minutes ago`;
    else if (roll < 0.04) line = "";
    else {
      const { ip, port } = next();
      proxies += 1;
      const user = `user${Math.floor(random() * 10_000)}`;
      if (roll < 0.08) line = `${ip}:${port}:${user}:pw-${Math.floor(random() * 1e6).toString(36)}`;
      else if (roll < 0.11) line = `${user}:secret@${ip}:${port}`;
      else if (roll < 0.13) line = `socks5://${ip}:${port}`;
      else if (roll < 0.15) line = `http://${ip}:${port}`;
      else line = `${ip}:${port}`;
    }
    lines.push(line);
    size += line.length + 1;
  }
  return { body: Buffer.from(`${lines.join("\n")}\n`, "utf8"), proxies };
}

/**
 * The reference passes: one global regex over the decoded body. The judged one
 * collects what it matches as `ip:port` strings (the least a caller can use,
 * as Roost's side returns lines); the other only counts (shown, not judged).
 */
const TEXT_PROXY = /(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})/g;
const TABLE_PROXY = /<td[^>]*>(\d{1,3}(?:\.\d{1,3}){3})<\/td>\s*<td[^>]*>(\d{1,5})<\/td>/g;

function regexPass(body: Buffer, pattern: RegExp): number {
  const text = body.toString("utf8");
  const regex = new RegExp(pattern.source, pattern.flags);
  const found: string[] = [];
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) found.push(`${match[1]}:${match[2]}`);
  return found.length;
}

function regexCount(body: Buffer, pattern: RegExp): number {
  const text = body.toString("utf8");
  const regex = new RegExp(pattern.source, pattern.flags);
  let count = 0;
  while (regex.exec(text) !== null) count += 1;
  return count;
}

/** Roost's side: what fetchSource does with a fetched body. */
function roostPass(body: Buffer, contentType: string): number {
  return extractProxyLines(body.toString("utf8"), contentType).length;
}

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Peak RSS of this process since the last reset (Linux: VmHWM, reset through clear_refs), bytes; null elsewhere. */
function resetPeakRss(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}
function peakRss(): number | null {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

interface Pass {
  ms: number;
  found: number;
  /** Peak RSS during the pass over RSS before it, bytes (null where it cannot be read). */
  rssGrowth: number | null;
}

function measure(pass: () => number): Pass {
  collectGarbage();
  const before = process.memoryUsage.rss();
  const canReset = resetPeakRss();
  const started = performance.now();
  const found = pass();
  const ms = performance.now() - started;
  const peak = canReset ? peakRss() : null;
  return { ms, found, rssGrowth: peak === null ? null : peak - before };
}

type Side = "roost" | "regex" | "count";
const SIDE_LABELS: Record<Side, string> = { roost: "Roost (extractProxyLines)", regex: "regex pass", count: "regex pass, count only" };

interface Input {
  name: string;
  contentType: string;
  body: Buffer;
  /** Proxies the generator wrote. */
  written: number;
  describe: string;
  reference: RegExp;
}


function runInput(config: ScraperBenchConfig, input: Input, verdicts: Verdict[], problems: string[]): void {
  const sides: Record<Side, () => number> = {
    roost: () => roostPass(input.body, input.contentType),
    regex: () => regexPass(input.body, input.reference),
    count: () => regexCount(input.body, input.reference),
  };
  // Same proxies on both sides, outside the timing: Roost's lines reduced to ip:port, the regex's ip:port.
  const roostLines = extractProxyLines(input.body.toString("utf8"), input.contentType);
  const roostKeys = new Set(roostLines.map((line) => new RegExp(TEXT_PROXY.source).exec(line)?.slice(1, 3).join(":") ?? line));
  const regexKeys = new Set([...input.body.toString("utf8").matchAll(new RegExp(input.reference.source, "g"))].map((m) => `${m[1]}:${m[2]}`));
  const missing = [...regexKeys].filter((key) => !roostKeys.has(key));
  const extra = [...roostKeys].filter((key) => !regexKeys.has(key));
  if (roostLines.length !== input.written || regexKeys.size !== input.written || missing.length > 0 || extra.length > 0) {
    problems.push(
      `${input.name}: ${input.written} proxies written, Roost found ${roostLines.length}, the regex ${regexKeys.size}; ` +
        `${missing.length} only the regex found (${missing.slice(0, 3).join(", ")}), ${extra.length} only Roost (${extra.slice(0, 3).join(", ")})`,
    );
  }
  out(`${input.describe}: ${mb(input.body.length)}, ${int(input.written)} proxies, Content-Type ${input.contentType}; ${config.passes} passes per side and run, sides rotating pass by pass:`);
  const order: Side[] = ["regex", "roost", "count"];
  for (const side of order) sides[side]();
  const perRun: Record<Side, Pass[]> = { roost: [], regex: [], count: [] };
  for (let run = 0; run < config.runs; run++) {
    const passes: Record<Side, Pass[]> = { roost: [], regex: [], count: [] };
    for (let pass = 0; pass < config.passes; pass++) {
      // Each pass starts one side later, so no side always runs first or last.
      for (let i = 0; i < order.length; i++) {
        const side = order[(i + run + pass) % order.length] ?? "roost";
        passes[side].push(measure(sides[side]));
      }
    }
    const line: string[] = [];
    for (const side of order) {
      const total = passes[side].reduce((sum, p) => ({ ms: sum.ms + p.ms, found: sum.found + p.found }), { ms: 0, found: 0 });
      const growths = passes[side].map((p) => p.rssGrowth).filter((g): g is number => g !== null);
      const summary: Pass = { ms: total.ms, found: total.found, rssGrowth: growths.length > 0 ? Math.max(...growths) : null };
      perRun[side].push(summary);
      line.push(`${SIDE_LABELS[side]} ${int((summary.found * 1000) / summary.ms)} proxies/s`);
    }
    const ratio = rate(perRun.roost[run]) / rate(perRun.regex[run]);
    out(`  run ${run + 1} (load average ${load()}): ${line.join(", ")}; Roost over the regex pass ${ratio.toFixed(2)} x`);
  }
  out(`  ${"side".padEnd(28)}${"proxies/s".padStart(12)}${"MB/s".padStart(9)}${"proxies".padStart(10)}${"peak RSS growth".padStart(18)}   (medians of the runs)`);
  const medians: Record<Side, number> = { roost: 0, regex: 0, count: 0 };
  for (const side of order) {
    const runs = perRun[side];
    medians[side] = median(runs.map(rate));
    const mbPerSec = median(runs.map((r) => (input.body.length * config.passes) / 1e6 / (r.ms / 1000)));
    const growths = runs.map((r) => r.rssGrowth).filter((g): g is number => g !== null);
    const growth = growths.length > 0 ? `${(median(growths) / 2 ** 20).toFixed(1)} MiB` : "n/a";
    out(
      `  ${SIDE_LABELS[side].padEnd(28)}${int(medians[side]).padStart(12)}${(mbPerSec.toFixed(1)).padStart(9)}` +
        `${int(median(runs.map((r) => r.found / config.passes))).padStart(10)}${growth.padStart(18)}`,
    );
  }
  const ratio = medians.roost / medians.regex;
  out(`  Roost over the regex pass: ${ratio.toFixed(2)} x; over the count-only pass ${(medians.roost / medians.count).toFixed(2)} x`);
  verdicts.push({ target: `${input.name}: Roost proxies/s >= ${TARGETS.roostOverRegex} x regex pass`, measured: `${ratio.toFixed(2)} x`, pass: ratio >= TARGETS.roostOverRegex });
}

const rate = (pass: Pass | undefined): number => (pass === undefined ? Number.NaN : (pass.found * 1000) / pass.ms);

function main(config: ScraperBenchConfig): number {
  const started = Date.now();
  const verdicts: Verdict[] = [];
  const problems: string[] = [];
  out(`Roost scraper benchmark${config.smoke ? " (smoke)" : ""}`);
  out(`node ${process.version}, ${os.cpus().length} cores, load average ${load()} (other work on the machine skews every number)`);
  const steal = cpuTimes();
  const html = htmlTablePage(config.bodyBytes);
  const text = textList(config.bodyBytes);
  const inputs: Input[] = [
    {
      name: "HTML table",
      contentType: "text/html; charset=utf-8",
      body: html.body,
      written: html.rows,
      describe: "HTML table page (ip, port, code, country, anonymity, google, https, last checked)",
      reference: TABLE_PROXY,
    },
    {
      name: "text list",
      contentType: "text/plain; charset=utf-8",
      body: text.body,
      written: text.proxies,
      describe: "Text list (ip:port; 4% ip:port:user:pass, 3% user:pass@ip:port, 4% scheme lines, 2% comments, 2% blank)",
      reference: TEXT_PROXY,
    },
  ];
  for (const input of inputs) {
    out();
    runInput(config, input, verdicts, problems);
  }
  return finishReport({ verdicts, problems, smoke: config.smoke, smokeReason: "bodies too small to judge", targetWidth: 56, startedAt: started, steal });
}

runPart("scraper", () => main(scraperBenchConfigFromProcess()));

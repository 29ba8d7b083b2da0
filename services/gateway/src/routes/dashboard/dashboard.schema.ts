/** GET /api/getDashboardInfo (DESIGN.md "Dashboard"); arrays are `[]`, never null. */
export interface DashboardInfo {
  total_checks: number;
  total_scraped: number;
  total_checks_week: number;
  total_scraped_week: number;
  reputation_breakdown: ReputationBreakdown;
  country_breakdown: CountryCount[];
  judge_valid_proxies: JudgeValidProxies[];
  /** Absent when the user has no proxy with a reputation yet. */
  top_reputation_proxy?: TopReputationProxy;
}

export interface ReputationBreakdown {
  good: number;
  neutral: number;
  poor: number;
  unknown: number;
}

export interface CountryCount {
  country: string;
  count: number;
}

export interface JudgeValidProxies {
  judge_url: string;
  elite_proxies: number;
  anonymous_proxies: number;
  transparent_proxies: number;
}

export interface TopReputationProxy {
  proxy_id: number;
  ip: string;
  port: number;
  score: number;
  label: string;
}

export const REPUTATION_LABELS = ["good", "neutral", "poor", "unknown"] as const;

/**
 * The GraphQL schema (SDL). Field names follow the REST JSON bodies
 * (snake_case, `UseHttpsForSocks`) so one mental model serves both; see
 * docs/graphql.md for the operations, limits and error codes.
 */
export const typeDefs = /* GraphQL */ `
  "An integer between -(2^53 - 1) and 2^53 - 1, sent as a JSON number."
  scalar SafeInt

  type Query {
    "The caller: id, role and checker settings."
    viewer: Viewer!
    "The same numbers as GET /api/getDashboardInfo."
    dashboard: Dashboard!
    "Total proxies of the caller (GET /api/getProxyCount)."
    proxyCount: Int!
    "A page of the caller's proxies in id order (GET /api/getProxyPage/{page}). page >= 1 (past the end: no rows, true total); pageSize >= 1, default 40, larger than 100 is clamped."
    proxies(page: Int! = 1, pageSize: Int, filter: ProxyFilter): ProxyPage!
    "One of the caller's proxies (GET /api/proxies/{id}), or null when the id is unknown or belongs to another user."
    proxy(id: Int!): ProxyDetail
  }

  type Mutation {
    "Saves a subset of the caller's settings with the rules of POST /api/user/settings; returns the settings as stored."
    updateUserSettings(input: UserSettingsInput!): UserSettings!
  }

  type Viewer {
    user_id: Int!
    "admin or user"
    role: String!
    settings: UserSettings!
  }

  type Judge {
    url: String!
    "default, or a regular expression the judge's answer must match"
    regex: String!
  }

  type UserSettings {
    http_protocol: Boolean!
    https_protocol: Boolean!
    socks4_protocol: Boolean!
    socks5_protocol: Boolean!
    "Milliseconds."
    timeout: Int!
    retries: Int!
    UseHttpsForSocks: Boolean!
    transport_protocol: String!
    auto_remove_failing_proxies: Boolean!
    auto_remove_failure_threshold: Int!
    judges: [Judge!]!
    "Read-only here; sources are managed through /api/scrapingSources."
    scraping_sources: [String!]!
    proxy_list_columns: [String!]!
    scrape_source_proxy_columns: [String!]!
    scrape_source_list_columns: [String!]!
  }

  input JudgeInput {
    url: String!
    regex: String!
  }

  "Every field is optional; omitted fields keep their values. Ranges as in REST: timeout 100..60000, retries 0..10, auto_remove_failure_threshold 1..100."
  input UserSettingsInput {
    http_protocol: Boolean
    https_protocol: Boolean
    socks4_protocol: Boolean
    socks5_protocol: Boolean
    timeout: Int
    retries: Int
    UseHttpsForSocks: Boolean
    transport_protocol: String
    auto_remove_failing_proxies: Boolean
    auto_remove_failure_threshold: Int
    judges: [JudgeInput!]
    proxy_list_columns: [String!]
    scrape_source_proxy_columns: [String!]
    scrape_source_list_columns: [String!]
  }

  type Dashboard {
    total_checks: SafeInt!
    total_scraped: SafeInt!
    total_checks_week: SafeInt!
    total_scraped_week: SafeInt!
    reputation_breakdown: ReputationBreakdown!
    country_breakdown: [CountryCount!]!
    judge_valid_proxies: [JudgeValidProxies!]!
    "Null when no proxy of the caller has a reputation yet."
    top_reputation_proxy: TopReputationProxy
  }

  type ReputationBreakdown {
    good: Int!
    neutral: Int!
    poor: Int!
    unknown: Int!
  }

  type CountryCount {
    country: String!
    count: Int!
  }

  type JudgeValidProxies {
    judge_url: String!
    elite_proxies: SafeInt!
    anonymous_proxies: SafeInt!
    transparent_proxies: SafeInt!
  }

  type TopReputationProxy {
    proxy_id: Int!
    ip: String!
    port: Int!
    score: Float!
    label: String!
  }

  "The list's query parameters (GET /api/getProxyPage/{page}) with the same values and rules; lists OR within, fields AND across."
  input ProxyFilter {
    "IP prefix, exact ip:port, country code or type."
    search: String
    "alive or dead"
    status: String
    "http, https, socks4, socks5"
    protocol: [String!]
    "ISO 3166-1 alpha-2 codes, or N/A"
    country: [String!]
    "datacenter, residential, mobile, unknown"
    type: [String!]
    "elite, anonymous, transparent, N/A"
    anonymity: [String!]
    "good, neutral, poor, unknown"
    reputation: [String!]
    "Milliseconds; keeps response_time <= maxTimeout (0 = no limit)."
    maxTimeout: Int
    "Keeps proxies whose latest success needed attempt <= maxRetries."
    maxRetries: Int
  }

  type ProxyPage {
    proxies: [Proxy!]!
    "Proxies matching the filter, not just this page."
    total: Int!
  }

  type Reputation {
    "overall, or a protocol"
    kind: String!
    score: Float!
    "good, neutral, poor or unknown"
    label: String!
  }

  type ProxyReputation {
    overall: Reputation!
  }

  type Proxy {
    id: Int!
    ip: String!
    port: Int!
    "Protocols alive at the latest check."
    protocols: [String!]!
    estimated_type: String!
    "Milliseconds."
    response_time: Int!
    country: String!
    anonymity_level: String!
    alive: Boolean!
    "ISO 8601; null when never checked."
    latest_check: String
    reputation: ProxyReputation!
  }

  "Reputation by kind: overall plus one per protocol that was checked."
  type ProxyDetailReputation {
    overall: Reputation!
    http: Reputation
    https: Reputation
    socks4: Reputation
    socks5: Reputation
  }

  type ProtocolResult {
    protocol: String!
    alive: Boolean!
    attempt: Int!
    response_time: Int!
    anonymity_level: String!
    judge: String!
    checked_at: String!
    "Results in the uptime window (the last 64 at most)."
    check_count: Int!
    "Alive results in the uptime window."
    success_count: Int!
    "success_count / check_count in percent, rounded."
    uptime_percentage: Int!
  }

  type ProxyStatistic {
    id: SafeInt!
    alive: Boolean!
    "0-based index of the try that succeeded (retries on total failure)."
    attempt: Int!
    response_time: Int!
    protocol: String!
    anonymity_level: String!
    judge: String!
    created_at: String!
  }

  type ProxyDetail {
    id: Int!
    ip: String!
    port: Int!
    protocols: [String!]!
    estimated_type: String!
    response_time: Int!
    country: String!
    anonymity_level: String!
    alive: Boolean!
    latest_check: String
    username: String!
    password: String!
    has_auth: Boolean!
    scheme_hint: String
    asn: Int
    attempt: Int
    consecutive_failures: Int!
    next_check_at: String!
    created_at: String!
    protocol_results: [ProtocolResult!]!
    latest_statistic: ProxyStatistic
    reputation: ProxyDetailReputation!
    "Newest first (GET /api/proxies/{id}/statistics); limit >= 1, default 100, larger than 500 is clamped."
    statistics(limit: Int): [ProxyStatistic!]!
  }
`;

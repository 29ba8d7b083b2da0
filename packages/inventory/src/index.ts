export {
  ANONYMITY_LEVELS,
  DEFAULT_PAGE_SIZE,
  DEFAULT_STATISTICS_LIMIT,
  ESTIMATED_TYPES,
  firstProtocolOfMaskSql,
  MAX_PAGE_SIZE,
  MAX_SEARCH_LENGTH,
  MAX_STATISTICS_LIMIT,
  PROXY_PROTOCOLS,
  protocolBit,
  protocolMask,
  protocolOrder,
  protocolsOfMask,
  REPUTATION_LABELS,
  singleProtocolOfMaskSql,
} from "./proxy-identity.js";
export type { ProxyProtocol, ReputationLabel } from "./proxy-identity.js";
export {
  buildProxyWhere,
  emptyFilters,
  filtersFromBulkRequest,
  inlineSqlCondition,
  isUnfiltered,
  parseProxyFilters,
  ProxyFilterError,
} from "./proxy-filter.js";
export type { BulkFilterRequest, ProxyFilters, SqlCondition } from "./proxy-filter.js";
export { countMatchingProxies, countUserProxies, FOLD_THRESHOLD, foldUserCounters, selectProxyPageText } from "./proxy-read.repository.js";
export type { FilterValues, SqlPool } from "./proxy-read.repository.js";
export {
  countFilteredProxies,
  countProxies,
  getProxyDetail,
  getStatisticDetail,
  listFilterValues,
  listProxies,
  listProxiesJson,
  listStatistics,
  parsePage,
  parsePageSize,
  parseStatisticsLimit,
} from "./proxy-read.service.js";
export type { ProxyDb, ProxyDetail, ProxyListItem, ProxyPage, ProxyStatistic, ProxyStatisticDetail } from "./proxy-read.service.js";
export { proxyPageJson, ProxyPageJsonError } from "./proxy-page-json.js";
export { deleteProxies } from "./proxy-delete.js";
export {
  AccountGoneError,
  afterIngest,
  compactCountersAfterUpload,
  ingest,
  ProxyUploadSession,
  UnknownSourceError,
  wakeCheckScheduler,
} from "./ingest/ingest-session.js";
export type { CheckHandOff, IngestDeps, IngestInput, IngestOptions, Slot, UploadDetails, UploadOutcome, UploadPool, UploadSessionOptions } from "./ingest/ingest-session.js";
export { streamExport, templateLineSql } from "./export/proxy-export.js";
export type { ExportTarget } from "./export/proxy-export.js";
export { compileTemplate, csvLine, DEFAULT_OUTPUT_FORMAT, EXPORT_COLUMNS, jsonObject, parseOutputFormat, TEMPLATE_PLACEHOLDERS } from "./export/proxy-export-format.js";
export type { ExportFormat, ExportRow, LineTemplate } from "./export/proxy-export-format.js";

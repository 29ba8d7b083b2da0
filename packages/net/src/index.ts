export { formatIpv4, parseIpv4 } from "./ipv4.js";
export { isReservedIpv4, RESERVED_IPV4_RANGES } from "./reserved-ranges.js";
export { DEFAULT_MAX_LINE_LENGTH, LineSplitter } from "./line-splitter.js";
export type { SplitLine } from "./line-splitter.js";
export { classifyLine, MAX_CREDENTIAL_LENGTH, parseProxyLine, PROXY_SCHEMES, scanCommonLine, stripLine } from "./proxy-line-parser.js";
export type { CommonLine, LineRejection, LineVerdict, ParsedProxy, ProxyScheme } from "./proxy-line-parser.js";

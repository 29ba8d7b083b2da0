export { formatIpv4, parseIpv4 } from "./ipv4.js";
export { classifyAddress, isReservedIpv4, METADATA_ADDRESSES, RESERVED_IPV4_RANGES, RESERVED_IPV6_RANGES, reservedIpv4Kind } from "./reserved-ranges.js";
export type { AddressClass, ReservedKind } from "./reserved-ranges.js";
export { OutboundGuard } from "./outbound-guard.js";
export type { CheckedTarget, OutboundGuardOptions, ResolveAll } from "./outbound-guard.js";
export {
  BadRedirectError,
  DeadlineExceededError,
  OutboundBlockedError,
  OutboundError,
  OutboundUnresolvedError,
  ProxyError,
  ResponseTooLargeError,
  TooManyRedirectsError,
} from "./outbound-errors.js";
export type { OutboundErrorCode } from "./outbound-errors.js";
export { Deadline } from "./deadline.js";
export { guardedConnect } from "./guarded-connect.js";
export type { GuardedConnectOptions, GuardedTlsOptions } from "./guarded-connect.js";
export { guardedGet } from "./guarded-http.js";
export type { GuardedGetOptions, GuardedResponse } from "./guarded-http.js";
export { DEFAULT_MAX_LINE_LENGTH, LineSplitter } from "./line-splitter.js";
export type { SplitLine } from "./line-splitter.js";
export { classifyLine, MAX_CREDENTIAL_LENGTH, parseProxyLine, PROXY_SCHEMES, scanCommonLine, stripLine } from "./proxy-line-parser.js";
export type { CommonLine, LineRejection, LineVerdict, ParsedProxy, ProxyScheme } from "./proxy-line-parser.js";
export { basicProxyAuthorization, dialThroughProxy, openProxyTunnel } from "./proxy-dialer.js";
export type { DialThroughProxyOptions, ProxyEndpoint, ProxyProtocol, ProxyTarget } from "./proxy-dialer.js";
export { requestThroughProxy } from "./proxy-request.js";
export type { ProxyRequestOptions, ProxyResponse } from "./proxy-request.js";

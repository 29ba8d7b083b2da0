export { createGeoDatabase, createGeoResolver, createUnknownGeoDatabase, defaultAsnCsvPath, defaultCountryMmdbPath, openGeoDatabase } from "./geo-database.js";
export type { GeoDatabase, GeoDatabaseOptions, GeoFacts, GeoResolver } from "./geo-database.js";
export { ESTIMATED_TYPES, estimateType } from "./estimated-type.js";
export type { EstimatedType } from "./estimated-type.js";
export type { AsnInfo } from "./asn-table.js";
export { RangeTable } from "./range-table.js";

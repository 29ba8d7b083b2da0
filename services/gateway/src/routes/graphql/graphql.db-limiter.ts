/**
 * Database statements one GraphQL operation may have running at once; 2.
 * Apollo resolves root fields in parallel, and the cost limit lets ~470
 * aliases of `proxies { total }` into one request: unlimited, they would
 * take every connection of the gateway's pool (10) for seconds and the rest
 * of the API, other users too, would wait and fail on its connect timeout.
 * Two is what a client gets from two REST calls at once: aliases make an
 * operation slower, never wider. The limiter itself: ../../db-limits/statement-limiter.ts.
 */
export const GRAPHQL_DB_CONCURRENCY = 2;

import type { GatewayDeps } from "../../gateway.deps.js";
import type { AuthContext } from "../../http/auth.middleware.js";

/** Per-request context: the bearer guard ran before Apollo, so `auth` is always set. */
export interface GraphqlContext {
  deps: GatewayDeps;
  auth: AuthContext;
}

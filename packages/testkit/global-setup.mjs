// Jest globalSetup for the integration and e2e tiers: build the migrated
// template database once. Jest loads global setup outside its module mapper,
// so this imports the compiled testkit (npm test builds first).
import { ensureTemplate } from "./dist/test-database.js";

export default async function globalSetup() {
  await ensureTemplate();
}

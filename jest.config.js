// Three tiers, selected with --selectProjects unit|integration|e2e.
//   unit         *.test.ts next to the code, no servers
//   integration  *.int.test.ts next to the code, real PostgreSQL + Redis
//   e2e          test/**/*.e2e.test.ts, real processes over HTTP/TCP
// Workspace packages resolve to their TypeScript sources, except @roost/db,
// whose generated Prisma client is compiled by tsc first (see DESIGN.md).
const moduleNameMapper = {
  "^@roost/db$": "<rootDir>/packages/db/dist/index.js",
  "^@roost/db/(.*)$": "<rootDir>/packages/db/dist/$1",
  "^@roost/service-([a-z-]+)$": "<rootDir>/services/$1/src/index.ts",
  "^@roost/([a-z-]+)$": "<rootDir>/packages/$1/src/index.ts",
  "^(\\.{1,2}/.*)\\.js$": "$1",
};

const base = {
  rootDir: ".",
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper,
  testEnvironment: "node",
  transform: {
    "^.+\\.ts$": ["ts-jest", { useESM: true, diagnostics: false, tsconfig: "<rootDir>/tsconfig.base.json" }],
  },
  modulePathIgnorePatterns: ["<rootDir>/.data", "/dist/"],
  transformIgnorePatterns: ["/node_modules/", "/packages/db/dist/"],
};

export default {
  // Integration tests talk to real servers; e2e tests pass their own larger timeouts.
  testTimeout: 60000,
  projects: [
    {
      ...base,
      displayName: "unit",
      testMatch: ["<rootDir>/{packages,services}/**/src/**/*.test.ts"],
      testPathIgnorePatterns: ["\\.int\\.test\\.ts$", "/node_modules/"],
    },
    {
      ...base,
      displayName: "integration",
      testMatch: ["<rootDir>/{packages,services}/**/src/**/*.int.test.ts"],
      globalSetup: "<rootDir>/packages/testkit/global-setup.mjs",
    },
    {
      ...base,
      displayName: "e2e",
      testMatch: ["<rootDir>/test/**/*.e2e.test.ts"],
      globalSetup: "<rootDir>/packages/testkit/global-setup.mjs",
    },
  ],
};

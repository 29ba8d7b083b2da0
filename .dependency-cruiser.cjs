// Dependency rules (npm test, beside madge); docs/architecture.md lists them. Imports
// resolve to sources through tsconfig.tests.json, so `@roost/service-*` counts like a
// relative import. all-in-one (the composition root), bench/ and test/ may import services.
module.exports = {
  forbidden: [
    {
      name: "service-imports-service",
      comment: "A service imports another service; share code through a package (services/all-in-one composes services and is exempt).",
      severity: "error",
      from: { path: "^services/([^/]+)/", pathNot: "^services/all-in-one/" },
      to: { path: "^services/", pathNot: "^services/$1/" },
    },
    {
      name: "package-imports-service",
      comment: "A package imports a service; dependencies point from services to packages only.",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: "^services/" },
    },
    {
      name: "gateway-core-imports-route",
      comment: "Only app.ts, among the files directly under services/gateway/src/, composes route folders.",
      severity: "error",
      from: { path: "^services/gateway/src/[^/]+$", pathNot: "^services/gateway/src/app\\.ts$" },
      to: { path: "^services/gateway/src/routes/" },
    },
  ],
  options: {
    exclude: { path: "(^|/)(dist|generated|node_modules)/" },
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.tests.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".mjs", ".js", ".cjs", ".d.ts"],
    },
  },
};

// Flat config: typescript-eslint's recommended rules, zero warnings allowed (npm run lint).
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["**/node_modules/**", "**/dist/**", "**/generated/**", ".data/**", "coverage/**", "**/*.js", "**/*.mjs", "**/*.cjs"],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "error",
    },
  },
  {
    files: ["**/*.test.ts", "test/**/*.ts", "**/testkit/**/*.ts"],
    rules: { "no-console": "off" },
  },
);

import { isValidEmail, normalizeEmail, passwordPolicyError } from "./password-policy.js";

describe("passwordPolicyError", () => {
  it.each([
    ["Abcdefgh123x", null],
    ["Ünïcödé-Pass-9", null],
    ["Abcdefgh12x", "Password must be at least 12 characters long"],
    ["correct-horse-42", "Password must contain an uppercase letter"],
    ["CORRECT-HORSE-42", "Password must contain a lowercase letter"],
    ["Correct-Horse-xx", "Password must contain a digit"],
    ["Correct Horse 42", "Password must not contain whitespace"],
    ["Correct\tHorse-42", "Password must not contain whitespace"],
    ["Correct\u00a0Horse-42", "Password must not contain whitespace"],
    [`Aa1${"x".repeat(1022)}`, "Password must be at most 1024 characters long"],
  ])("%p -> %p", (password, expected) => {
    expect(passwordPolicyError(password)).toBe(expected);
  });

  it("refuses what is not a string", () => {
    for (const value of [undefined, null, 123456789012, ["Correct-Horse-42"], { toString: () => "Correct-Horse-42" }]) {
      expect(passwordPolicyError(value)).toBe("Password is required");
    }
  });
});

describe("e-mail rules", () => {
  it("trims and lowercases", () => {
    expect(normalizeEmail("  Alice@Example.COM\t")).toBe("alice@example.com");
  });

  it.each(["alice@example.com", "a.b+tag@sub.example.co.uk", "o'neil@example.org", "x@xn--bcher-kva.example"])("accepts %p", (email) => {
    expect(isValidEmail(email)).toBe(true);
  });

  it.each(["", "plain", "a@b", "a@@b.com", "a b@example.com", "@example.com", "a@example..com", "a..b@example.com", "a@-example.com", "a@example.c", `${"a".repeat(65)}@example.com`, "a@example.com\n"])(
    "refuses %p",
    (email) => {
      expect(isValidEmail(email)).toBe(false);
    },
  );

  // Invisible or reordering characters: an address that displays as another.
  it.each([
    ["NUL", "a\u0000b@example.com"],
    ["BEL", "a\u0007b@example.com"],
    ["DEL", "a\u007fb@example.com"],
    ["C1 control", "a\u0085b@example.com"],
    ["right-to-left override", "\u202Emoc.elpmaxe@eilla"],
    ["left-to-right isolate", "a\u2066b@example.com"],
    ["zero-width joiner", "a\u200Db@example.com"],
    ["byte order mark", "\uFEFFalice@example.com"],
  ])("refuses a %s", (_name, email) => {
    expect(isValidEmail(email)).toBe(false);
  });
});

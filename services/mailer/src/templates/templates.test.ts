import { renderPasswordChanged } from "./password-changed.template.js";
import { renderPasswordReset, resetLink } from "./password-reset.template.js";
import { retryDelaySeconds } from "../outbox-drainer.js";

describe("reset link", () => {
  it("is {PUBLIC_APP_URL}/reset-password?token=…, keeping a path prefix and dropping query and fragment", () => {
    expect(resetLink("https://roost.example.com", "abc_-1")).toBe("https://roost.example.com/reset-password?token=abc_-1");
    expect(resetLink("https://roost.example.com/", "t")).toBe("https://roost.example.com/reset-password?token=t");
    expect(resetLink("https://example.com/roost?x=1#y", "t")).toBe("https://example.com/roost/reset-password?token=t");
    expect(resetLink("http://127.0.0.1:8080/app/", "t")).toBe("http://127.0.0.1:8080/app/reset-password?token=t");
  });
});

describe("templates", () => {
  it("puts the token only inside the link, in plain text and HTML", () => {
    const token = "TOKEN_value-123";
    const link = resetLink("https://roost.example.com", token);
    const mail = renderPasswordReset({ link, ttlMinutes: 30 });
    expect(mail.subject).not.toContain(token);
    expect(mail.text.split(link)).toHaveLength(2);
    expect(mail.text.split(link).join("")).not.toContain(token);
    expect(mail.html).toContain(`<a href="${link}">${link}</a>`);
    expect(mail.html.split(link).join("")).not.toContain(token);
    expect(mail.text).toContain("within 30 minutes");
  });

  it("escapes what it puts into HTML", () => {
    const mail = renderPasswordChanged({ changedAt: new Date("2026-11-22T10:00:00.123Z"), publicAppUrl: 'https://x.example/"><script>' });
    expect(mail.html).not.toContain("<script>");
    expect(mail.html).toContain("&quot;&gt;&lt;script&gt;");
    expect(mail.text).toContain("2026-11-22 10:00:00 UTC");
  });
});

describe("retry back-off", () => {
  it("doubles from the base after each failed attempt and stops at the cap", () => {
    expect([1, 2, 3, 4, 5, 6].map((attempts) => retryDelaySeconds(attempts, 30, 3600))).toEqual([30, 60, 120, 240, 480, 960]);
    expect(retryDelaySeconds(20, 30, 3600)).toBe(3600);
    expect(retryDelaySeconds(1000, 30, 3600)).toBe(3600);
  });
});

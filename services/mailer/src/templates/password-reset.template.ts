import { escapeHtml, htmlDocument, type RenderedMail } from "./html.js";

/**
 * The reset link: {PUBLIC_APP_URL}/reset-password?token=…, from configuration
 * only. A path in PUBLIC_APP_URL is kept (https://host/roost →
 * https://host/roost/reset-password).
 */
export function resetLink(publicAppUrl: string, token: string): string {
  const base = new URL(publicAppUrl);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  base.search = "";
  base.hash = "";
  const url = new URL("reset-password", base);
  url.searchParams.set("token", token);
  return url.toString();
}

/** The token appears only inside the link (as its href and as the text to copy), never on its own. */
export function renderPasswordReset(input: { link: string; ttlMinutes: number }): RenderedMail {
  const subject = "Reset your Roost password";
  const text = [
    "Hello,",
    "",
    "Someone asked to reset the password of the Roost account that uses this e-mail address.",
    `To choose a new password, open this link within ${input.ttlMinutes} minutes:`,
    "",
    input.link,
    "",
    "The link works once. If you did not ask for this, ignore this e-mail: your password stays as it is.",
    "",
  ].join("\n");
  const link = escapeHtml(input.link);
  const html = htmlDocument(
    subject,
    [
      "<p>Hello,</p>",
      "<p>Someone asked to reset the password of the Roost account that uses this e-mail address.",
      `To choose a new password, open this link within ${input.ttlMinutes} minutes:</p>`,
      `<p><a href="${link}">${link}</a></p>`,
      "<p>The link works once. If you did not ask for this, ignore this e-mail: your password stays as it is.</p>",
    ].join("\n"),
  );
  return { subject, text, html };
}

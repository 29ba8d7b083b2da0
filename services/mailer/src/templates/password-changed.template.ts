import { escapeHtml, htmlDocument, type RenderedMail } from "./html.js";

/** Confirmation after a reset: when it happened and what to do if it was not the owner. */
export function renderPasswordChanged(input: { changedAt: Date; publicAppUrl: string }): RenderedMail {
  const subject = "Your Roost password was changed";
  const when = input.changedAt.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  const text = [
    "Hello,",
    "",
    `The password of your Roost account was reset on ${when}. Every signed-in session was signed out.`,
    "",
    `If this was not you, reset your password again at ${input.publicAppUrl} and tell your administrator.`,
    "",
  ].join("\n");
  const appUrl = escapeHtml(input.publicAppUrl);
  const html = htmlDocument(
    subject,
    [
      "<p>Hello,</p>",
      `<p>The password of your Roost account was reset on ${escapeHtml(when)}. Every signed-in session was signed out.</p>`,
      `<p>If this was not you, reset your password again at <a href="${appUrl}">${appUrl}</a> and tell your administrator.</p>`,
    ].join("\n"),
  );
  return { subject, text, html };
}

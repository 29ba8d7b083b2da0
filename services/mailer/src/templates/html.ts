/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A minimal e-mail HTML document: inline styles only, as mail clients strip the rest. */
export function htmlDocument(title: string, bodyHtml: string): string {
  return [
    "<!doctype html>",
    '<html><head><meta charset="utf-8">',
    `<title>${escapeHtml(title)}</title></head>`,
    '<body style="font-family: sans-serif; line-height: 1.5; color: #222;">',
    bodyHtml,
    "</body></html>",
  ].join("\n");
}

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

import { createSmtpSender } from "./smtp-sender.js";
import { startSmtpSink, type SmtpSink } from "./test-support/smtp-sink.js";

/** A relay that offers no STARTTLS (the sink): with requireTls nothing is sent in the clear. */
describe("SMTP without TLS", () => {
  let sink: SmtpSink;
  beforeAll(async () => {
    sink = await startSmtpSink();
  });
  afterAll(async () => {
    await sink.stop();
  });

  const settings = (requireTls: boolean) => ({
    host: "127.0.0.1",
    port: sink.port,
    secure: false,
    requireTls,
    auth: null,
    timeoutMs: 5_000,
    fromAddress: "roost@example.com",
    fromName: "Roost",
    publicAppUrl: "https://roost.example.com",
  });
  const mail = { outboxId: 1n, to: "alice@example.com", subject: "Reset", text: "secret link", html: "<p>secret link</p>" };

  it("requireTls: the send fails and the server receives nothing", async () => {
    const sender = createSmtpSender(settings(true));
    try {
      await expect(sender.send(mail)).rejects.toThrow();
      expect(sink.messages).toHaveLength(0);
    } finally {
      sender.close();
    }
  });

  it("requireTls false (a loopback relay): sent", async () => {
    const sender = createSmtpSender(settings(false));
    try {
      await sender.send(mail);
      await sink.waitForMessages(1);
    } finally {
      sender.close();
    }
  });
});

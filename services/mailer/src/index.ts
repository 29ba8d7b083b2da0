export { mailerConfigFromEnv, mailerEnvSchema, mailerInfraFromEnv, mailerInfraSchema } from "./config/mailer.config.js";
export type { MailerConfig, MailerInfra, SmtpSettings } from "./config/mailer.config.js";
export { createMailerService } from "./mailer.service.js";
export type { MailerDeps, MailerService } from "./mailer.service.js";
export { retryDelaySeconds } from "./outbox-drainer.js";
export { resetLink } from "./templates/password-reset.template.js";

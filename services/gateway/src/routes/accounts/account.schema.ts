import { z } from "zod";

// Shapes only; the e-mail format and password policy are checked by
// @roost/auth so every route applies the same rules and messages.
export const credentialsSchema = z.object({
  email: z.string({ message: "email is required" }).max(320, "email is too long"),
  password: z.string({ message: "password is required" }).max(1024, "password is too long"),
});

export const changePasswordSchema = z.object({
  oldPassword: z.string({ message: "oldPassword is required" }).max(1024),
  newPassword: z.string({ message: "newPassword is required" }).max(1024),
});

export const deleteAccountSchema = z.object({
  password: z.string({ message: "password is required" }).max(1024),
});

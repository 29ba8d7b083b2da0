import { z } from "zod";

// Shapes only; the e-mail format and the password policy are checked by
// @roost/auth so every route applies the same rules and messages.
export const forgotPasswordSchema = z.object({
  email: z.string({ message: "email is required" }).max(320, "email is too long"),
});

export const resetPasswordSchema = z.object({
  // Tokens are 43 characters; anything far longer is not one of ours.
  token: z.string({ message: "token is required" }).min(1, "token is required").max(512, "token is too long"),
  newPassword: z.string({ message: "newPassword is required" }).max(1024, "newPassword is too long"),
});

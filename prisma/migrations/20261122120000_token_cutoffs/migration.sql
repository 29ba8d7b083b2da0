-- Per-user token revocation cutoffs move out of "users" into their own table
-- without a foreign key: when an account is deleted its cutoff must outlive
-- the row, or the account's tokens would count as valid again once Redis is
-- re-seeded from PostgreSQL (see docs/auth.md).

-- CreateTable
CREATE TABLE "token_cutoffs" (
    "user_id" INTEGER NOT NULL,
    "revoked_before" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "token_cutoffs_pkey" PRIMARY KEY ("user_id")
);

-- CreateIndex
CREATE INDEX "token_cutoffs_revoked_before_idx" ON "token_cutoffs"("revoked_before");

-- Carry existing cutoffs over.
INSERT INTO "token_cutoffs" ("user_id", "revoked_before")
SELECT "id", "tokens_revoked_before" FROM "users" WHERE "tokens_revoked_before" IS NOT NULL;

-- AlterTable
ALTER TABLE "users" DROP COLUMN "tokens_revoked_before";

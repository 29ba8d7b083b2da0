import net, { type AddressInfo } from "node:net";
import pg from "pg";
import type { Response } from "supertest";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, STRONG_PASSWORD, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { connectionsInTransaction, stalledUpload } from "../../test-support/stalled-clients.js";
import { bearer, claimsOf } from "../../test-support/token-claims.js";
import { ACCOUNT_BUSY } from "./account.service.js";

/**
 * deleteAccount and changePassword wait for a row lock at most
 * ACCOUNT_LOCK_WAIT_MS (docs/auth.md "Busy accounts"): an upload whose client
 * stops sending holds its user's row until it is cut off, and requests that
 * waited for it held pooled connections from everyone else. They answer 409,
 * give their connection back, and leave the account as it was (no cutoff:
 * the user is not logged out everywhere).
 */

const NEW_PASSWORD = "Battery-Staple-77";
/** Far above ACCOUNT_LOCK_WAIT_MS, far below API_STREAM_STALL_SECONDS (30 s, which ended the waits before). */
const ANSWER_DEADLINE_MS = 12_000;

/** The response, or a failure if it has not come by the deadline. */
async function answeredWithin(pending: PromiseLike<Response>, what: string): Promise<Response> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ANSWER_DEADLINE_MS} ms`)), ANSWER_DEADLINE_MS);
  });
  try {
    return await Promise.race([Promise.resolve(pending), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function expectBusy(res: Response): void {
  expect([res.status, res.headers["content-type"], res.body]).toEqual([409, expect.stringMatching(/^application\/json/), { error: ACCOUNT_BUSY }]);
}

describe("account changes while the account's row is locked", () => {
  let h: GatewayHarness;
  let port: number;
  let observer: pg.Client;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    // The account limits stay out of the way: this is about locks, not request counts.
    h = await startGatewayHarness({
      RATE_LIMIT_PASSWORD_CHECKS_PER_ACCOUNT_PER_MINUTE: "1000",
      RATE_LIMIT_PASSWORD_CHECK_FAILURES_PER_ACCOUNT: "1000",
    });
    ({ port } = (await h.service.start()) as AddressInfo);
    // Its own connection: the gateway's pool is what is under test.
    observer = new pg.Client({ connectionString: h.database.url });
    await observer.connect();
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await observer.end();
    await h.service.stop();
    await h.close();
  });

  /** Connections of the gateway inside a transaction. */
  const inTransaction = (): Promise<number> => connectionsInTransaction(observer);
  /** Connections of the gateway's pool given out now (the harness shares the pool with the gateway). */
  const checkedOut = (): number => h.db.pool.totalCount - h.db.pool.idleCount;
  const waitingOnLock = async (statement: string): Promise<number> =>
    (await observer.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE $1", [statement]))
      .rowCount ?? 0;

  /**
   * An upload that sends one line and then nothing: its transaction holds the
   * user's row (FOR KEY SHARE) until the socket goes away or the stall timeout
   * cuts it off.
   */
  const heldUpload = async (token: string): Promise<net.Socket> => {
    const { socket } = await stalledUpload(port, token, "9.9.9.9:8080", sockets);
    // Past BEGIN, the upload lock and the row lock: idle in its transaction, waiting for the body.
    await waitFor(
      async () =>
        (
          await observer.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'
              AND query NOT ILIKE '%advisory%' AND query <> 'BEGIN'`,
          )
        ).rowCount === 1,
      { what: "the upload's open transaction" },
    );
    return socket;
  };

  const login = (email: string, password = STRONG_PASSWORD) => h.http.post("/api/login").send({ email, password });
  const deleteAccount = (token: string) => h.http.post("/api/deleteAccount").set(bearer(token)).send({ password: STRONG_PASSWORD });
  const cutoffKeyOf = (userId: number) => `${h.deps.config.QUEUE_PREFIX}:auth:cutoff:${userId}`;

  it("deleteAccount during a stalled upload: 409 within the lock wait, no connection kept, the account and its sessions intact; after the upload it works", async () => {
    const { token, email } = await h.register();
    const { token: bystander } = await h.register();
    const userId = claimsOf(token).user_id;
    const upload = await heldUpload(token);

    // Ten deletions at once, each with a fresh token, as in the audit.
    const tokens: string[] = [];
    for (let i = 0; i < 10; i++) tokens.push((await login(email)).body.token as string);
    const deletions = tokens.map((t) => answeredWithin(deleteAccount(t), "deleteAccount"));
    await waitFor(async () => (await waitingOnLock("DELETE FROM %users%")) >= 1, { what: "a deletion waiting for the upload's row lock" });
    // Another user is served meanwhile.
    const theirs = await answeredWithin(h.http.get("/api/getProxyCount").set(bearer(bystander)), "another user's read");
    expect([theirs.status, theirs.body]).toEqual([200, 0]);

    for (const res of await Promise.all(deletions)) expectBusy(res);
    // Only the upload's connection is out, nobody waits for one, no transaction but the upload's.
    await waitFor(() => checkedOut() === 1 && h.db.pool.waitingCount === 0, { what: "the deletions' connections back in the pool" });
    expect(await inTransaction()).toBe(1);

    // Nothing changed: the account, its sessions (no cutoff in either store), its password.
    expect(await h.db.prisma.user.count({ where: { id: userId } })).toBe(1);
    expect(await h.db.prisma.accountPurge.count({ where: { userId } })).toBe(0);
    expect(await h.db.prisma.tokenCutoff.count({ where: { userId } })).toBe(0);
    expect(await h.deps.redis.get(cutoffKeyOf(userId))).toBeNull();
    for (const t of [token, ...tokens]) expect((await h.http.get("/api/checkLogin").set(bearer(t))).status).toBe(200);
    expect((await login(email)).status).toBe(200);

    // The client goes away, the upload rolls back, and the deletion goes through.
    upload.destroy();
    await waitFor(async () => (await inTransaction()) === 0, { what: "the upload's rollback" });
    const deleted = await answeredWithin(deleteAccount(token), "deleteAccount after the upload");
    expect([deleted.status, deleted.body]).toEqual([200, "Account deleted."]);
    expect((await h.http.get("/api/checkLogin").set(bearer(tokens[0]!))).status).toBe(401);
    expect((await login(email)).status).toBe(401);
    expect(await h.db.prisma.tokenCutoff.count({ where: { userId } })).toBe(1);
    await waitFor(() => checkedOut() === 0, { what: "every connection back in the pool" });
  }, 60_000);

  it("changePassword while another transaction holds the account's row: 409 within the lock wait, password and sessions unchanged; then it works", async () => {
    const { token, email } = await h.register();
    const userId = claimsOf(token).user_id;
    const change = (t: string) => h.http.post("/api/changePassword").set(bearer(t)).send({ oldPassword: STRONG_PASSWORD, newPassword: NEW_PASSWORD });

    // A deletion of this account in progress elsewhere (another instance, the admin CLI) holds the row like this.
    await observer.query("BEGIN");
    try {
      await observer.query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [userId]);
      const busy = await Promise.all([change(token), change(token), change(token)].map((r) => answeredWithin(r, "changePassword")));
      for (const res of busy) expectBusy(res);
      await waitFor(() => checkedOut() === 0 && h.db.pool.waitingCount === 0, { what: "the requests' connections back in the pool" });
    } finally {
      await observer.query("ROLLBACK");
    }
    expect(await h.db.prisma.tokenCutoff.count({ where: { userId } })).toBe(0);
    expect(await h.deps.redis.get(cutoffKeyOf(userId))).toBeNull();
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(200);
    expect((await login(email, NEW_PASSWORD)).status).toBe(401);

    const changed = await answeredWithin(change(token), "changePassword after the lock");
    expect([changed.status, changed.body]).toEqual([200, "Password changed."]);
    expect((await h.http.get("/api/checkLogin").set(bearer(token))).status).toBe(401);
    expect((await login(email, NEW_PASSWORD)).status).toBe(200);
  }, 60_000);
});

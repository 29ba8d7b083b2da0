import { createLimiter } from "./db-limiter.js";

/** A task the test finishes by hand, so the order of events is fixed. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every settled promise run its continuations. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("createLimiter", () => {
  it("never runs more than max tasks at once, starts waiting tasks in call order and returns their results", async () => {
    const limiter = createLimiter(2);
    const tasks = Array.from({ length: 6 }, () => deferred<number>());
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    const results = tasks.map((task, i) =>
      limiter.run(async () => {
        started.push(i);
        peak = Math.max(peak, ++running);
        try {
          return await task.promise;
        } finally {
          running--;
        }
      }),
    );
    await settle();
    expect(started).toEqual([0, 1]);

    // Finish out of order: each freed slot goes to the oldest waiter.
    tasks[1]!.resolve(10);
    await settle();
    expect(started).toEqual([0, 1, 2]);
    tasks[0]!.resolve(0);
    tasks[2]!.resolve(20);
    await settle();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    tasks[4]!.resolve(40);
    tasks[3]!.resolve(30);
    await settle();
    tasks[5]!.resolve(50);

    await expect(Promise.all(results)).resolves.toEqual([0, 10, 20, 30, 40, 50]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
  });

  it("gives the slot of a task that rejects or throws to the next one, and passes the error on", async () => {
    const limiter = createLimiter(1);
    const failing = limiter.run(() => Promise.reject(new Error("query failed")));
    const throwing = limiter.run(() => {
      throw new Error("thrown before a promise");
    });
    const after = limiter.run(() => Promise.resolve("ran"));
    await expect(failing).rejects.toThrow("query failed");
    await expect(throwing).rejects.toThrow("thrown before a promise");
    await expect(after).resolves.toBe("ran");
    // Nothing is left holding the slot.
    await expect(limiter.run(() => Promise.resolve("free"))).resolves.toBe("free");
  });

  it("does not let a newcomer take a freed slot before a task that was already waiting", async () => {
    const limiter = createLimiter(1);
    const first = deferred<void>();
    const order: string[] = [];
    const running = limiter.run(() => first.promise);
    const waiting = limiter.run(async () => {
      order.push("waiting");
    });
    // Called right after the limiter saw the first task end, before the waiter resumes.
    const newcomer = first.promise.then(() =>
      limiter.run(async () => {
        order.push("newcomer");
      }),
    );
    first.resolve();
    await Promise.all([running, waiting, newcomer]);
    expect(order).toEqual(["waiting", "newcomer"]);
  });

  it("reports tasks running and waiting after each change", async () => {
    const states: string[] = [];
    const limiter = createLimiter(1, ({ running, waiting }) => states.push(`${running}/${waiting}`));
    const first = deferred<void>();
    const second = deferred<void>();
    const a = limiter.run(() => first.promise);
    const b = limiter.run(() => second.promise);
    expect(states).toEqual(["1/0", "1/1"]);
    first.resolve();
    await a;
    await settle();
    // The slot passed straight to the waiter: still one running, none waiting.
    expect(states).toEqual(["1/0", "1/1", "1/0"]);
    second.resolve();
    await b;
    expect(states).toEqual(["1/0", "1/1", "1/0", "0/0"]);
  });

  it("refuses a max below 1", () => {
    expect(() => createLimiter(0)).toThrow(RangeError);
    expect(() => createLimiter(1.5)).toThrow(RangeError);
  });
});

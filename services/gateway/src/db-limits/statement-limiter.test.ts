import { CallerGone, createLimiter, LimiterWaitTimeout } from "./statement-limiter.js";

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

  it("gives freed slots to the waiting keys in turn, each key's tasks in call order", async () => {
    const limiter = createLimiter(1);
    const started: string[] = [];
    const tasks = new Map<string, ReturnType<typeof deferred<void>>>();
    const run = (name: string, key?: string | number) => {
      const task = deferred<void>();
      tasks.set(name, task);
      return limiter.run(async () => {
        started.push(name);
        await task.promise;
      }, key === undefined ? {} : { key });
    };
    const all = [run("a1", 1), run("a2", 1), run("a3", 1), run("a4", 1), run("b1", 2), run("b2", 2), run("c1", 3), run("n1"), run("n2")];
    // One at a time, in the order the limiter picks them.
    for (let i = 0; i < all.length; i++) {
      await settle();
      tasks.get(started.at(-1) as string)?.resolve();
    }
    await Promise.all(all);
    // a1 ran at once; then the keys took turns in the order they first waited: 1, 2, 3 and the keyless.
    expect(started).toEqual(["a1", "a2", "b1", "c1", "n1", "a3", "b2", "n2", "a4"]);
  });

  it("reports tasks running and waiting after each change", async () => {
    const states: string[] = [];
    const limiter = createLimiter(1, { observe: ({ running, waiting }) => states.push(`${running}/${waiting}`) });
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

  it("rejects a task that waited past maxWaitMs without running it, and takes it out of the line", async () => {
    const states: string[] = [];
    const limiter = createLimiter(1, { maxWaitMs: 20, observe: ({ running, waiting }) => states.push(`${running}/${waiting}`) });
    const first = deferred<string>();
    const ran: string[] = [];
    const holding = limiter.run(() => first.promise);
    const late = limiter.run(async () => {
      ran.push("late");
    });
    await expect(late).rejects.toBeInstanceOf(LimiterWaitTimeout);
    expect(states).toEqual(["1/0", "1/1", "1/0"]);
    // The slot is still the first task's; when it ends, nobody is left to hand it to.
    first.resolve("first");
    await expect(holding).resolves.toBe("first");
    expect(states.at(-1)).toBe("0/0");
    expect(ran).toEqual([]);
    await expect(limiter.run(() => Promise.resolve("free"))).resolves.toBe("free");
  });

  it("takes the keys of waiters that timed out out of the turns, so later waiters of any key still run in turn", async () => {
    const states: string[] = [];
    const limiter = createLimiter(1, { maxWaitMs: 20, observe: ({ running, waiting }) => states.push(`${running}/${waiting}`) });
    const first = deferred<void>();
    const ran: string[] = [];
    const holding = limiter.run(() => first.promise);
    const late = [1, 2, 1].map((key) => limiter.run(async () => void ran.push(`late ${key}`), { key }));
    for (const wait of late) await expect(wait).rejects.toBeInstanceOf(LimiterWaitTimeout);
    expect(states.at(-1)).toBe("1/0");
    // Keys 1 and 2 waited before and left no line behind: the freed slot goes to these, in the order they came.
    const after = [2, 1, 2].map((key, i) => limiter.run(async () => void ran.push(`after ${i} (${key})`), { key }));
    expect(states.at(-1)).toBe("1/3");
    first.resolve();
    await Promise.all([holding, ...after]);
    expect(ran).toEqual(["after 0 (2)", "after 1 (1)", "after 2 (2)"]);
    expect(states.at(-1)).toBe("0/0");
  });

  it("does not time out a task that got its turn in time", async () => {
    const limiter = createLimiter(1, { maxWaitMs: 60_000 });
    const first = deferred<void>();
    const holding = limiter.run(() => first.promise);
    const second = limiter.run(() => Promise.resolve("second"));
    first.resolve();
    await holding;
    await expect(second).resolves.toBe("second");
  });

  it("skips a task whose caller has gone, on the call or when its wait ends, and gives the slot on", async () => {
    const states: string[] = [];
    const limiter = createLimiter(1, { observe: ({ running, waiting }) => states.push(`${running}/${waiting}`) });
    const ran: string[] = [];
    await expect(limiter.run(async () => void ran.push("gone already"), { abandoned: () => true })).rejects.toBeInstanceOf(CallerGone);
    // Refused before it took a slot or a place in line.
    expect(states).toEqual([]);

    const first = deferred<void>();
    let gone = false;
    const holding = limiter.run(() => first.promise);
    const leaving = limiter.run(async () => void ran.push("left while waiting"), { abandoned: () => gone });
    const staying = limiter.run(async () => void ran.push("stayed"));
    gone = true;
    first.resolve();
    await holding;
    await expect(leaving).rejects.toBeInstanceOf(CallerGone);
    await staying;
    expect(ran).toEqual(["stayed"]);
    expect(states).toEqual(["1/0", "1/1", "1/2", "1/1", "1/0", "0/0"]);
  });

  it("refuses a max below 1 and a maxWaitMs that is not a positive integer", () => {
    expect(() => createLimiter(0)).toThrow(RangeError);
    expect(() => createLimiter(1.5)).toThrow(RangeError);
    expect(() => createLimiter(1, { maxWaitMs: 0 })).toThrow(RangeError);
    expect(() => createLimiter(1, { maxWaitMs: 2.5 })).toThrow(RangeError);
  });
});

import { fork, type ChildProcess } from "node:child_process";

/**
 * A forked bench helper spoken to over IPC, one request and its answer at a
 * time. It is killed if it outlives `stop()`, and gets no terminal signals
 * of its own: it exits when the benchmark's IPC channel closes.
 */
export interface IpcChild<Request, Message> {
  ask(request: Request): Promise<Message>;
  stop(): Promise<void>;
  /** Its process id (for /proc readings). */
  readonly pid: number;
}

/**
 * `detached`: a session of its own (setsid), as a service started on its own has, so the
 * kernel's autogroup scheduling does not share one CPU slice between it and the load generator
 * (the child must then exit on its own when the IPC channel closes). `execArgv`: its Node flags.
 */
export function forkIpcChild<Request, Message>(entry: URL, options: { detached?: boolean; execArgv?: string[] } = {}): IpcChild<Request, Message> {
  const child: ChildProcess = fork(entry, [], { stdio: ["ignore", "inherit", "inherit", "ipc"], detached: options.detached ?? false, ...(options.execArgv ? { execArgv: options.execArgv } : {}) });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let queue: Promise<unknown> = Promise.resolve();
  const once = (request: Request): Promise<Message> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: Message): void => {
        child.off("exit", onExit);
        resolve(message);
      };
      const onExit = (code: number | null, signal: string | null): void => {
        child.off("message", onMessage);
        reject(new Error(`${entry.pathname.split("/").pop() ?? "child"} exited (${signal ?? code})`));
      };
      child.once("message", onMessage);
      child.once("exit", onExit);
      child.send(request as object);
    });
  return {
    pid: child.pid ?? 0,
    ask(request) {
      const answer = queue.then(() => once(request));
      queue = answer.catch(() => undefined);
      return answer;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.disconnect();
      const deadline = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(deadline);
    },
  };
}

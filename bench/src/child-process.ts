import { fork, type ChildProcess } from "node:child_process";

/**
 * A forked bench helper spoken to over IPC, one request and its answer at a
 * time. It is killed if it outlives `stop()`, and gets no terminal signals
 * of its own: it exits when the benchmark's IPC channel closes.
 */
export interface IpcChild<Request, Message> {
  ask(request: Request): Promise<Message>;
  stop(): Promise<void>;
}

export function forkIpcChild<Request, Message>(entry: URL): IpcChild<Request, Message> {
  const child: ChildProcess = fork(entry, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
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

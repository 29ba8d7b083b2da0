import type { IncomingMessage } from "node:http";
import { Transform, type Readable } from "node:stream";
import busboy from "busboy";

/** The body passed API_UPLOAD_MAX_BODY_BYTES (413). */
export class UploadTooLargeError extends Error {
  override readonly name = "UploadTooLargeError";
}

/** Not a readable multipart body (400). */
export class MalformedUploadError extends Error {
  override readonly name = "MalformedUploadError";
}

/** Parts one upload may have: busboy skips any past these without a word, so passing one is a 400. */
export const UPLOAD_PART_LIMITS = { files: 10, fields: 100 } as const;

/** Multipart text fields that carry proxies (contract: POST /api/addProxies). */
export const UPLOAD_TEXT_FIELDS = ["proxyTextarea", "clipboardProxies"] as const;
export const UPLOAD_FILE_FIELD = "file";

export interface UploadPartHandlers {
  /** A `file` part; resolve once the stream is consumed. */
  file(stream: Readable): Promise<void>;
  /** A `proxyTextarea` or `clipboardProxies` field. */
  text(value: string): Promise<void>;
}

/**
 * Reads a multipart upload part by part with backpressure (files stream, text fields arrive whole); `maxBytes` bounds
 * every byte of the body. Rejects with UploadTooLargeError past it, MalformedUploadError for a broken body or more parts
 * than UPLOAD_PART_LIMITS, or a handler's error, after the running handler returns. Parts of other names are skipped.
 */
export function readMultipartUpload(
  req: IncomingMessage,
  maxBytes: number,
  handlers: UploadPartHandlers,
  /** Text fields handed to `handlers.text` (scrape sources name theirs differently). */
  textFields: readonly string[] = UPLOAD_TEXT_FIELDS,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: "utf8",
        limits: { fileSize: maxBytes, fieldSize: maxBytes, ...UPLOAD_PART_LIMITS, fieldNameSize: 200 },
      });
    } catch {
      reject(new MalformedUploadError("Malformed multipart/form-data request"));
      return;
    }
    let received = 0;
    let settled = false;
    let chain: Promise<void> = Promise.resolve();
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received > maxBytes) callback(new UploadTooLargeError("upload too large"));
        else callback(null, chunk);
      },
    });

    const stop = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      if (error === undefined) {
        resolve();
        return;
      }
      req.unpipe(counter);
      counter.unpipe(parser);
      counter.destroy();
      // Ends the part being read with an error, so its handler returns.
      parser.destroy();
      // Discard what the client still sends, so the error response can go out.
      req.resume();
      // Settle only once the handler in progress has: the caller cleans up after it.
      const settle = (): void => reject(error);
      chain.then(settle, settle);
    };
    const run = (task: () => Promise<void>): void => {
      chain = chain.then(() => (settled ? undefined : task())).catch((error: unknown) => stop(error));
    };

    parser.on("file", (name, stream) => {
      stream.on("limit", () => stop(new UploadTooLargeError("upload too large")));
      // A body ending inside this part errors its stream, and an unheard error event ends the process.
      // Until the part's handler runs (a skipped part never gets one) the error is ours; then it is the
      // handler's, which may also have destroyed the stream with its own error.
      let handled = false;
      stream.on("error", () => {
        if (!handled) stop(new MalformedUploadError("Malformed multipart/form-data request"));
      });
      if (name !== UPLOAD_FILE_FIELD) {
        stream.resume();
        return;
      }
      run(() => {
        handled = true;
        return handlers.file(stream);
      });
    });
    parser.on("field", (name, value, info) => {
      if (info.valueTruncated) {
        stop(new UploadTooLargeError("upload too large"));
        return;
      }
      if (textFields.includes(name)) run(() => handlers.text(value));
    });
    const tooMany = (): void =>
      stop(new MalformedUploadError(`Too many parts: an upload takes at most ${UPLOAD_PART_LIMITS.files} files and ${UPLOAD_PART_LIMITS.fields} text fields`));
    parser.on("filesLimit", tooMany);
    parser.on("fieldsLimit", tooMany);
    parser.on("close", () => {
      void chain.then(() => stop());
    });
    parser.on("error", (error: unknown) => stop(error instanceof UploadTooLargeError ? error : new MalformedUploadError("Malformed multipart/form-data request")));
    counter.on("error", (error: unknown) => stop(error instanceof UploadTooLargeError ? error : new MalformedUploadError("Upload interrupted")));
    // 'aborted' has been emitted already when the client went away before this was called.
    if (req.destroyed) {
      stop(new MalformedUploadError("Upload interrupted"));
      return;
    }
    req.on("aborted", () => stop(new MalformedUploadError("Upload interrupted")));
    req.pipe(counter).pipe(parser);
  });
}

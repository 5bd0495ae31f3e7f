import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Api, AssistantMessageEventStream, Model, SimpleStreamOptions, TranscriptContext } from "@earendil-works/pi-ai";
import { errorText } from "../errors.ts";
import type { Clock } from "../ports/clock.ts";
import type { Correlation, Interceptor } from "../ports/observer.ts";
import { endStream, failedStream } from "../agent/block-stream.ts";
import type { Bounds } from "./bounds.ts";
import { runInterceptors } from "./interceptors.ts";
import type { ProviderWatch } from "./provider-backpressure.ts";
import { withStrictTurns } from "./strict-turns.ts";
import { renameRepeatedCallIds } from "./unique-call-ids.ts";

/** What a model turn needs from its drive. */
export interface ModelTurnContext {
  /** The agent setup's stream function (the provider). */
  streamFn: StreamFn;
  clock: Clock;
  bounds: Bounds;
  /** Sees each turn's HTTP exchange (status, `Retry-After`, a refused connection). */
  watch: ProviderWatch;
  interceptors: readonly Interceptor[];
  /** The current turn's correlation. */
  correlation: () => Correlation;
  /** The turn timed out with `error` (before its response is ended). */
  onTimeout: (error: string) => void;
  /** Aborts the agent (after a timed-out response was ended). */
  stopModel: () => void;
  /** The run must fail with `error` (an interceptor aborted or threw). */
  fail: (error: string) => void;
  /**
   * The call ids the conversation already used (read when the response ends): a repeated id in
   * the response is renamed before anything records or runs it (`unique-call-ids.ts`).
   */
  usedCallIds?: () => ReadonlySet<string>;
  /** A repeated call id was renamed. */
  onRenamed?: (renames: Array<{ from: string; to: string }>) => void;
}

/**
 * The agent's stream function: the turn interceptor boundary, the turn timeout, and an abort
 * that cannot wedge. The provider's stream is handed to the loop as is (no re-streaming per
 * event); on timeout or abort it is ended from outside with an error event, which also
 * releases a provider that ignores its signal.
 */
export function modelTurnStreamFn(ctx: ModelTurnContext): StreamFn {
  return (model, context, options) => {
    if (ctx.interceptors.length === 0) return openTurn(ctx, model, context, options);
    return new Promise<AssistantMessageEventStream>((handOff) => {
      let stream: AssistantMessageEventStream | undefined;
      const fail = (error: string) => {
        ctx.fail(error);
        if (stream) endStream(stream, model, ctx.clock.now(), "error", error);
        else handOff(failedStream(model, ctx.clock.now(), "error", error));
      };
      // The boundary spans the full round-trip: `next()` resolves once the response has ended.
      const info = { kind: "turn", correlation: ctx.correlation(), model: { provider: model.provider, id: model.id } } as const;
      runInterceptors(ctx.interceptors, info, async () => {
        stream = await openTurn(ctx, model, context, options);
        handOff(stream);
        await stream.result();
      }).then(
        (ran) => {
          if (!ran) fail("model turn aborted by an interceptor");
        },
        (err) => fail(errorText(err)),
      );
    });
  };
}

/** Calls the model with the turn's bound attached. Never rejects. */
async function openTurn(
  ctx: ModelTurnContext,
  model: Model<Api>,
  context: TranscriptContext,
  options: SimpleStreamOptions | undefined,
): Promise<AssistantMessageEventStream> {
  const { clock } = ctx;
  if (options?.signal?.aborted) return failedStream(model, clock.now(), "aborted", "Request was aborted");
  let stream: AssistantMessageEventStream;
  try {
    stream = await ctx.streamFn(model, context, withStrictTurns(ctx.watch.watch(options)));
  } catch (err) {
    // The StreamFn contract says "never throw"; a throw is a provider error.
    return failedStream(model, clock.now(), "error", errorText(err));
  }
  if (options?.signal?.aborted) {
    endStream(stream, model, clock.now(), "aborted", "Request was aborted");
    return stream;
  }
  ctx.bounds.boundTurn(stream, model, { onTimeout: ctx.onTimeout, stopModel: ctx.stopModel });
  if (ctx.usedCallIds) uniqueCallIds(stream, ctx.usedCallIds, ctx.onRenamed);
  return stream;
}

/**
 * Makes the response's final message (what the agent loop records and executes: it reads
 * `result()`, never the events' partials) carry no call id the conversation used before.
 */
function uniqueCallIds(
  stream: AssistantMessageEventStream,
  used: () => ReadonlySet<string>,
  onRenamed: ModelTurnContext["onRenamed"],
): void {
  const result = stream.result.bind(stream);
  let final: ReturnType<typeof result> | undefined;
  stream.result = () =>
    (final ??= result().then((message) => {
      const renames = renameRepeatedCallIds(message, used());
      if (renames.length > 0) onRenamed?.(renames);
      return message;
    }));
}

package kvsim.trace;

import java.util.Arrays;

/**
 * One LLM request of a request trace ({@link RequestFormat}).
 *
 * @param line the line it was read from (0 when generated)
 * @param id the request's id, unique in its trace
 * @param arrivalNanos arrival time, in simulated nanoseconds
 * @param promptTokens prompt length, in tokens (&gt; 0)
 * @param outputTokens tokens the request will generate (&gt; 0)
 * @param hashIds prefix block hashes of the prompt, or null when the trace carries none
 * @param samples parallel samples ({@code n}), at least 1
 * @param beamWidth beam width, at least 1 (1: no beam search)
 */
public record Request(long line, long id, long arrivalNanos, int promptTokens, int outputTokens, long[] hashIds, int samples, int beamWidth) {

  /** A request with one sample, no beam search and no prefix hashes. */
  public static Request of(long id, long arrivalNanos, int promptTokens, int outputTokens) {
    return new Request(0, id, arrivalNanos, promptTokens, outputTokens, null, 1, 1);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Request r
        && line == r.line
        && id == r.id
        && arrivalNanos == r.arrivalNanos
        && promptTokens == r.promptTokens
        && outputTokens == r.outputTokens
        && Arrays.equals(hashIds, r.hashIds)
        && samples == r.samples
        && beamWidth == r.beamWidth;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(id) * 31 + Arrays.hashCode(hashIds);
  }

  @Override
  public String toString() {
    return "Request[id=" + id + ", t=" + arrivalNanos + " ns, prompt=" + promptTokens + ", output=" + outputTokens
        + (hashIds == null ? "" : ", hash_ids=" + hashIds.length) + (samples > 1 ? ", n=" + samples : "") + (beamWidth > 1 ? ", beam_width=" + beamWidth : "") + "]";
  }
}

package kvsim.trace;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A request source whose arrival times are another's divided by a factor, rounded to whole
 * nanoseconds, as the importers' {@code speedup} option does ({@link ImportedRequestSource}); the
 * lengths, ids and order are the other source's. Used to run a request trace file at another mean
 * rate (a capacity probe).
 */
public final class SpeedupRequestSource implements RequestSource {
  private final RequestSource inner;
  private final double speedup;
  private final Map<String, Object> description;

  /** Wraps {@code inner}, dividing its times by {@code speedup} (positive). */
  public SpeedupRequestSource(RequestSource inner, double speedup) {
    if (!(speedup > 0) || Double.isInfinite(speedup)) {
      throw new IllegalArgumentException("speedup must be positive and finite, got " + speedup);
    }
    this.inner = inner;
    this.speedup = speedup;
    this.description = new LinkedHashMap<>(inner.describe());
    description.put("speedup", speedup);
  }

  @Override
  public Request next() throws IOException {
    Request r = inner.next();
    if (r == null) {
      return null;
    }
    long t = Math.round(r.arrivalNanos() / speedup);
    return new Request(r.line(), r.id(), t, r.promptTokens(), r.outputTokens(), r.hashIds(), r.samples(), r.beamWidth());
  }

  @Override
  public int hashBlockTokens() {
    return inner.hashBlockTokens();
  }

  @Override
  public String name() {
    return inner.name();
  }

  @Override
  public Map<String, Object> describe() {
    return description;
  }

  @Override
  public void close() throws IOException {
    inner.close();
  }
}

package kvsim.serving;

import java.io.IOException;
import java.io.UncheckedIOException;
import kvsim.core.InputException;
import kvsim.devicemodel.Roofline;
import kvsim.engine.Event;
import kvsim.engine.Simulator;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;

/**
 * The serving-level (L2) engine: requests arrive, a continuous-batching {@link Scheduler} runs
 * iterations, each iteration's memory goes to a {@link KvManager} over the allocator under test,
 * and a {@link Roofline} gives each iteration's time. It runs on the event core ({@link
 * Simulator}) with two events:
 *
 * <ul>
 *   <li>{@code Arrival} (priority 0): the next request of the source arrives; it becomes a waiting
 *       sequence, or is rejected when its prompt reaches {@code max_model_len} (vLLM refuses such
 *       requests when they arrive; the KV memory holds at least {@code max_model_len} tokens, as
 *       vLLM requires at start-up, so every other request fits alone); it reads the next
 *       request and schedules itself at its time, and starts an iteration if the engine is idle.
 *   <li>{@code Iteration} (priority 1, so requests that arrive at the same instant are seen first):
 *       the end of the iteration in flight, if any (every scheduled sequence that caught up
 *       samples one token; a sequence that reached its output length finishes and frees its
 *       memory), then the plan of the next one; its duration is the roofline's forward time of the
 *       scheduled tokens reading the scheduled sequences' KV, plus the allocator's modelled time
 *       spent planning it. With nothing to run the engine idles until the next arrival.
 * </ul>
 *
 * <p>Token ids: a request's prompt is unique to it unless the trace gives prefix hashes (the
 * trace carries lengths, not text), and its k-th output token is {@code 50000 + k}.
 * Deterministic: no randomness, and events in (time, priority, insertion) order.
 */
public final class ServingEngine {
  /** Receives progress every {@link #PROGRESS_EVERY} iterations. */
  @FunctionalInterface
  public interface Progress {
    /** Called with the iterations run and requests finished so far. */
    void update(long iterations, long finished);
  }

  /** Iterations between two progress callbacks. */
  public static final long PROGRESS_EVERY = 1 << 16;
  /** Token id of a request's first output token; the k-th is this plus k. */
  public static final int FIRST_OUTPUT_TOKEN = 50_000;

  private final Scheduler scheduler;
  private final KvManager kv;
  private final Roofline roofline;
  private final SchedulerConfig config;
  private final long kvBytesPerToken;
  private final boolean check;
  private final Progress progress;
  private final ServingMetrics metrics = new ServingMetrics();
  private final Simulator sim = new Simulator();
  private final StepPlan plan = new StepPlan();
  private final Arrival arrival = new Arrival();
  private final Iteration iteration = new Iteration();
  private RequestSource source;
  private boolean inFlight;

  /**
   * An engine over one system.
   *
   * @param scheduler the scheduler, built over {@code kv}
   * @param kv the KV manager
   * @param roofline the cost model of the forward pass
   * @param config the scheduler's limits ({@code max_model_len} among them)
   * @param kvBytesPerToken the model's KV bytes per token, for the bytes an iteration reads
   * @param check run the KV manager's invariant checker after every iteration
   * @param progress progress callback, or null
   */
  public ServingEngine(Scheduler scheduler, KvManager kv, Roofline roofline, SchedulerConfig config, long kvBytesPerToken, boolean check, Progress progress) {
    if (kv.capacityTokens() < config.maxModelLen()) {
      throw new IllegalArgumentException("the KV memory holds " + kv.capacityTokens() + " tokens, fewer than max_model_len " + config.maxModelLen()
          + ": one sequence could outgrow it (vLLM refuses to start so); give more KV memory or a lower max_model_len");
    }
    this.scheduler = scheduler;
    this.kv = kv;
    this.roofline = roofline;
    this.config = config;
    this.kvBytesPerToken = kvBytesPerToken;
    this.check = check;
    this.progress = progress;
  }

  /** Runs every request of {@code requests} to its end and returns the metrics. */
  public ServingMetrics run(RequestSource requests) throws IOException {
    this.source = requests;
    try {
      Request first = requests.next();
      if (first != null) {
        arrival.pending = first;
        sim.scheduleAt(arrival, first.arrivalNanos());
        metrics.firstArrivalNanos = first.arrivalNanos();
      }
      sim.run();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    if (scheduler.waiting() > 0 || scheduler.running() > 0) {
      throw new IllegalStateException(scheduler.waiting() + " sequences waiting and " + scheduler.running() + " running when the run ended");
    }
    metrics.rejected += scheduler.ignored();
    metrics.kvCounters = kv.counters();
    return metrics;
  }

  /** Returns the simulated time, in nanoseconds. */
  public long nowNanos() {
    return sim.nowNanos();
  }

  private final class Arrival extends Event {
    Request pending;

    Arrival() {
      super(0);
    }

    @Override
    protected void actions() {
      admit(pending);
      try {
        pending = source.next();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (pending != null) {
        sim.scheduleAt(this, pending.arrivalNanos());
      }
      if (!inFlight && !iteration.isScheduled()) {
        sim.scheduleAt(iteration, sim.nowNanos());
      }
    }
  }

  private void admit(Request r) {
    if (r.samples() > 1 || r.beamWidth() > 1) {
      throw new InputException(source.name() + (r.line() > 0 ? ":" + r.line() : "") + ": " + (r.samples() > 1 ? "n" : "beam_width")
          + ": parallel sampling and beam search are not modelled yet (request " + r.id() + ")");
    }
    metrics.arrived++;
    int maxModelLen = config.maxModelLen();
    if (r.promptTokens() >= maxModelLen) {
      metrics.rejected++;
      return;
    }
    int maxOutput = (int) Math.min(r.outputTokens(), (long) maxModelLen - r.promptTokens());
    if (maxOutput < r.outputTokens()) {
      metrics.truncated++;
    }
    Sequence s = new Sequence(r, maxOutput);
    kv.add(s);
    scheduler.add(s);
  }

  private final class Iteration extends Event {
    Iteration() {
      super(1);
    }

    @Override
    protected void actions() {
      long now = sim.nowNanos();
      if (inFlight) {
        finishIteration(now);
        inFlight = false;
      }
      long allocatorBefore = kv.modelledNanos();
      scheduler.schedule(plan);
      if (plan.size() == 0) {
        if (scheduler.running() > 0 || scheduler.waiting() > 0) {
          throw new IllegalStateException("the scheduler planned nothing with " + scheduler.running() + " sequences running and "
              + scheduler.waiting() + " waiting: a request larger than the KV memory should have been rejected on arrival");
        }
        return;
      }
      metrics.recordIteration(now, plan, kv, scheduler.running(), scheduler.waiting());
      if (check) {
        kv.checkInvariants();
      }
      long kvRead = 0;
      for (int i = 0; i < plan.size(); i++) {
        kvRead += (long) plan.sequence(i).numComputedTokens() * kvBytesPerToken;
      }
      long durationNanos = roofline.forwardNanos(plan.totalTokens(), kvRead) + (kv.modelledNanos() - allocatorBefore);
      inFlight = true;
      sim.scheduleAt(this, Math.addExact(now, Math.max(1, durationNanos)));
      if (progress != null && metrics.iterations % PROGRESS_EVERY == 0) {
        progress.update(metrics.iterations, metrics.finished);
      }
    }
  }

  private void finishIteration(long now) {
    for (int i = 0; i < plan.size(); i++) {
      Sequence s = plan.sequence(i);
      if (!s.caughtUp()) {
        continue;
      }
      metrics.outputTokens++;
      if (s.firstTokenNanos < 0) {
        s.firstTokenNanos = now;
      }
      if (s.sample(kv, FIRST_OUTPUT_TOKEN + s.outputTokens)) {
        s.finishNanos = now;
        metrics.recordFinish(s);
      }
    }
    scheduler.removeFinished();
    if (check) {
      kv.checkInvariants();
    }
  }
}

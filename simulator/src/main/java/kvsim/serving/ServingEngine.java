package kvsim.serving;

import java.io.IOException;
import java.io.UncheckedIOException;
import kvsim.core.InputException;
import kvsim.core.Tag;
import kvsim.devicemodel.ForwardTimeModel;
import kvsim.engine.Event;
import kvsim.engine.Simulator;
import kvsim.trace.L1TraceWriter;
import kvsim.trace.Request;
import kvsim.trace.RequestSource;
import kvsim.trace.TraceEvent;

/**
 * The serving-level (L2) engine: requests arrive, a continuous-batching {@link Scheduler} runs
 * iterations, each iteration's memory goes to a {@link KvManager} over the allocator under test,
 * and a {@link ForwardTimeModel} (by default the roofline) gives each iteration's time. It runs on the event core ({@link
 * Simulator}) with two events:
 *
 * <ul>
 *   <li>{@code Arrival} (priority 0): the next request of the source arrives; it becomes a waiting
 *       sequence, or is rejected when its prompt reaches {@code max_model_len} (vLLM refuses such
 *       requests when they arrive; the KV memory holds at least {@code max_model_len} tokens, as
 *       vLLM requires at start-up, so every other request fits alone); it reads the next
 *       request and schedules itself at its time, and starts an iteration if the engine is idle. A
 *       forking group that the KV memory could not hold alone ({@link KvManager.Forking#canEverHold}) is
 *       rejected too.
 *   <li>{@code Iteration} (priority 1, so requests that arrive at the same instant are seen first):
 *       the end of the iteration in flight, if any, taken by the scheduler (Note [Iteration
 *       contract] in {@link Scheduler}: every scheduled sequence that caught up
 *       samples one token; a sequence that reached its output length finishes and frees its
 *       memory), then the plan of the next one; its duration is the forward-time model's time of the
 *       scheduled tokens reading the scheduled sequences' KV, plus the allocator's modelled time
 *       spent planning it, combined with the engine's CPU overhead in one place ({@code
 *       iterationNanos}). With nothing to run the engine idles until the next arrival.
 * </ul>
 *
 * <p>With asynchronous scheduling (vLLM v1's default; {@link Scheduler#asyncScheduling}, Note
 * [Asynchronous scheduling] in {@link VllmV1Scheduler}) each {@code Iteration} takes the outcome of
 * the step that ended, starts the step planned while that one ran, and at once plans the step
 * after it, whose sequences take their tokens ahead ({@link Scheduler#sampleAhead}); an iteration
 * then lasts {@code max(forward, overhead)} instead of {@code forward + overhead}.
 *
 * <p>Token ids: a request's prompt is unique to it unless the trace gives prefix hashes (the
 * trace carries lengths, not text), and its k-th output token is {@code 50000 + k}.
 *
 * <p>Requests with {@code n} parallel samples or a beam width are {@link SequenceGroup}s. A
 * scheduler that forks groups ({@link Scheduler#forksGroups}) gets the lead alone; when the lead
 * samples its first token the scheduler's end of the iteration ({@link Scheduler#updateFromOutput})
 * forks the group's other sequences from it ({@link KvManager.Forking#fork}) into the running
 * list, and every one of them samples that iteration. Beam groups then re-select their beams
 * after every iteration in which all of them sampled (Note [Beam selection] in {@link
 * SequenceGroup}): a dropped beam's sequence becomes a fork of a surviving one; the engine charges
 * the forks' modelled time to the next iteration. A scheduler that fans groups out gets every sequence as a request of its own.
 * Deterministic: the only randomness is the beam selection, seeded per request from the run seed,
 * and events run in (time, priority, insertion) order.
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
  /** The run seed of the beam selection when none is given. */
  public static final long DEFAULT_SEED = 42;

  private final Scheduler scheduler;
  private final KvManager kv;
  private final ForwardTimeModel forwardTime;
  private final SchedulerConfig config;
  private final long kvBytesPerToken;
  private final boolean check;
  private final Progress progress;
  private final long seed;
  private final ServingMetrics metrics = new ServingMetrics();
  private final Simulator sim = new Simulator();
  /** The step in flight, or being planned under synchronous scheduling. */
  private StepPlan plan = new StepPlan();
  /** Under asynchronous scheduling, the step planned while {@link #plan} runs (empty when none). */
  private StepPlan next = new StepPlan();
  private PlanCost planCost = new PlanCost();
  private PlanCost nextCost = new PlanCost();
  /** Whether the scheduler plans each step before the last one's tokens are known (Note [Asynchronous scheduling] in {@link VllmV1Scheduler}). */
  private final boolean async;
  private final Arrival arrival = new Arrival();
  private final Iteration iteration = new Iteration();
  private final Output output = new Output();
  /** The KV manager's group counters, or null when it has none. */
  private final KvManager.GroupCounting groupCounting;
  /** The KV manager's forking, or null when it cannot fork (then a forking group is a programming error). */
  private final KvManager.Forking forking;
  /** Under the naive plan, the KV manager's activations; null under the two-pool plan. */
  private KvManager.Activations activations;
  private RequestSource source;
  /** The KV manager's preparing of prompts, or null when it prepares none. */
  private final KvManager.PreparesPrompts preparing;
  /** Whether prompts are prepared ahead on another thread where the manager prepares them (Note [Prompts prepared ahead]). */
  private boolean prepareAhead = Runtime.getRuntime().availableProcessors() > 1;
  /** Whether the scheduler may take quiet decode steps (Note [Quiet decode steps] in {@link QueueScheduler}). */
  private boolean quietSteps = true;
  /** The requests read and prepared ahead, during a run that prepares them; null otherwise. */
  private PreparedRequests ahead;
  private boolean inFlight;
  /** Modelled time of the forks made while finishing the last iteration, charged to the next one. */
  private long forkNanos;
  /** Under the naive plan, activation bytes per scheduled token; 0 under the two-pool plan. */
  private long activationBytesPerToken;
  private long activationHandle = -1;

  /**
   * An engine over one system.
   *
   * @param scheduler the scheduler, built over {@code kv}
   * @param kv the KV manager
   * @param forwardTime the cost model of the forward pass
   * @param config the scheduler's limits ({@code max_model_len} among them)
   * @param kvBytesPerToken the model's KV bytes per token, for the bytes an iteration reads
   * @param check run the KV manager's invariant checker after every iteration
   * @param progress progress callback, or null
   */
  public ServingEngine(Scheduler scheduler, KvManager kv, ForwardTimeModel forwardTime, SchedulerConfig config, long kvBytesPerToken, boolean check, Progress progress) {
    this(scheduler, kv, forwardTime, config, kvBytesPerToken, check, progress, DEFAULT_SEED);
  }

  /** An engine as above whose beam selection draws from {@code seed} and each request's id. */
  public ServingEngine(Scheduler scheduler, KvManager kv, ForwardTimeModel forwardTime, SchedulerConfig config, long kvBytesPerToken, boolean check, Progress progress,
      long seed) {
    if (kv.capacityTokens() < config.maxModelLen()) {
      throw new IllegalArgumentException("the KV memory holds " + kv.capacityTokens() + " tokens, fewer than max_model_len " + config.maxModelLen()
          + ": one sequence could outgrow it (vLLM refuses to start so); give more KV memory or a lower max_model_len");
    }
    this.scheduler = scheduler;
    this.kv = kv;
    this.forwardTime = forwardTime;
    this.config = config;
    this.kvBytesPerToken = kvBytesPerToken;
    this.check = check;
    this.progress = progress;
    this.seed = seed;
    this.groupCounting = kv.capability(KvManager.GroupCounting.class).orElse(null);
    this.forking = kv.capability(KvManager.Forking.class).orElse(null);
    this.preparing = kv.capability(KvManager.PreparesPrompts.class).orElse(null);
    this.async = scheduler.asyncScheduling();
  }

  /**
   * Whether to prepare prompts ahead on another thread (Note [Prompts prepared ahead]); by
   * default where the machine has more than one processor. The results are the same either way.
   */
  void prepareAhead(boolean on) {
    this.prepareAhead = on;
  }

  /**
   * Writes every memory operation of the allocator under test from now on to {@code trace}, each
   * as an L1 event stamped with the simulated time: the KV, and under the naive plan the
   * activations too. An I/O error ends the run.
   */
  public void emitTo(L1TraceWriter trace) {
    KvManager.require(kv, KvManager.Observable.class, "a trace of the serving run").listen(new MemoryListener() {
      @Override
      public void allocated(long id, long sizeBytes, Tag tag, boolean splittable) {
        write(TraceEvent.alloc(sim.nowNanos(), id, sizeBytes, tag, splittable, 0));
      }

      @Override
      public void freed(long id) {
        write(TraceEvent.free(sim.nowNanos(), id, 0));
      }

      private void write(TraceEvent e) {
        try {
          trace.write(e);
        } catch (IOException ex) {
          throw new UncheckedIOException(ex);
        }
      }
    });
  }

  /**
   * The naive memory plan (a plain PyTorch program): every iteration allocates its activations and
   * temporaries, {@code bytesPerToken} per scheduled token, in the KV manager's own allocator
   * after planning, and frees them when it ends. Note [Activation OOM]: when the allocator refuses
   * them, the iteration does not run; as a PyTorch server that catches {@code
   * torch.OutOfMemoryError} fails the batch it was running, every request with a sequence in the
   * batch is aborted (its memory freed, counted in {@code requests_aborted}) and the engine plans
   * again at once. Without it (the default, vLLM's two pools) activations live in a region of
   * their own, sized for the largest batch, and are not allocated here.
   */
  public void placeActivationsWithKv(long bytesPerToken) {
    if (bytesPerToken < 1) {
      throw new IllegalArgumentException("activation bytes per token must be positive");
    }
    if (async) {
      throw new IllegalStateException("the naive memory plan runs contiguous systems, whose schedulers are synchronous");
    }
    this.activations = KvManager.require(kv, KvManager.Activations.class, "the naive memory plan");
    this.activationBytesPerToken = bytesPerToken;
    metrics.naivePlan = true;
  }

  /**
   * Checks each request against these per-request targets as it finishes ({@link
   * ServingMetrics#countTargets}); call before {@link #run}.
   */
  public void countTargets(java.util.List<ServingMetrics.RequestTarget> targets) {
    metrics.countTargets(targets);
  }

  // Note [Prompts prepared ahead]: what adding a request to the KV manager computes from the request
  // alone (a paged manager with prefix caching hashes every full block of its prompt, Note [Prompts
  // hashed ahead] in kvsim.alloc.paged.PromptHasher) does not depend on the simulation. The
  // engine has its manager's preparer do it, with the reading of the source, on a thread of its
  // own (PreparedRequests), a few batches ahead of the arrivals, and hands each request's result
  // to the manager when it arrives. A simulation runs on one thread; this puts the other core of
  // a 2-core machine to use. Requests, their order, and what the manager holds are the same as
  // without it, so the results are the same bytes (PagedServingTest compares them); a failure of
  // the source reaches the run where it would have. Reading a trace file and hashing the prompts
  // were about a seventh of the week-long run's samples (async-profiler); its first 6 hours took
  // 39.3 s before and 32.6 s after, on 2 cores.

  /**
   * Whether the scheduler may take quiet decode steps where it and the KV manager can (Note [Quiet
   * decode steps] in {@link QueueScheduler}); by default it may. The results are the same either way.
   */
  void quietSteps(boolean on) {
    this.quietSteps = on;
  }

  /** Runs every request of {@code requests} to its end and returns the metrics. */
  public ServingMetrics run(RequestSource requests) throws IOException {
    this.source = requests;
    if (quietSteps) {
      scheduler.allowQuietSteps(output);
    }
    KvManager.PromptPreparer preparer = prepareAhead && preparing != null ? preparing.preparer() : null;
    try (PreparedRequests prepared = preparer == null ? null : new PreparedRequests(requests, preparer, config.maxModelLen())) {
      this.ahead = prepared;
      Request first = nextRequest();
      if (first != null) {
        arrival.pending = first;
        arrival.pendingPrepared = preparedForLast();
        sim.scheduleAt(arrival, first.arrivalNanos());
        metrics.firstArrivalNanos = first.arrivalNanos();
      }
      sim.run();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    } finally {
      this.ahead = null;
    }
    if (scheduler.waiting() > 0 || scheduler.running() > 0) {
      throw new IllegalStateException(scheduler.waiting() + " sequences waiting and " + scheduler.running() + " running when the run ended");
    }
    metrics.rejected += scheduler.ignored();
    metrics.kvCounters = kv.counters();
    metrics.groupCounters = groupCounting == null ? java.util.Map.of() : groupCounting.groupCounters();
    return metrics;
  }

  /** Returns the simulated time, in nanoseconds. */
  public long nowNanos() {
    return sim.nowNanos();
  }

  /** Returns the source's next request, read ahead or not (Note [Prompts prepared ahead]). */
  private Request nextRequest() throws IOException {
    return ahead != null ? ahead.next() : source.next();
  }

  /** Returns what was prepared for the request {@link #nextRequest} returned last, or null. */
  private Object preparedForLast() {
    return ahead != null ? ahead.prepared() : null;
  }

  /**
   * Returns the output tokens a request is cut to, {@code max_model_len} less its prompt where
   * that is fewer than it asks for, or -1 when its prompt reaches {@code max_model_len} and it is
   * refused on arrival.
   */
  static int maxOutputTokens(Request r, int maxModelLen) {
    if (r.promptTokens() >= maxModelLen) {
      return -1;
    }
    return (int) Math.min(r.outputTokens(), (long) maxModelLen - r.promptTokens());
  }

  private final class Arrival extends Event {
    Request pending;
    /** What was prepared for {@code pending} (Note [Prompts prepared ahead]), or null. */
    Object pendingPrepared;

    Arrival() {
      super(0);
    }

    @Override
    protected void actions() {
      admit(pending, pendingPrepared);
      try {
        pending = nextRequest();
        pendingPrepared = pending == null ? null : preparedForLast();
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

  private void admit(Request r, Object prepared) {
    metrics.recordArrival(r.arrivalNanos());
    int maxOutput = maxOutputTokens(r, config.maxModelLen());
    if (maxOutput < 0) {
      metrics.rejected++;
      return;
    }
    if (maxOutput < r.outputTokens()) {
      metrics.truncated++;
    }
    SequenceGroup g = new SequenceGroup(r, maxOutput, scheduler.forksGroups(), seed);
    if (g.width() > 1) {
      metrics.multiSequenceRequests++;
    }
    if (g.forking() && forking == null) {
      throw new IllegalStateException("request " + r.id() + " forks " + g.width() + " sequences, but " + kv.getClass().getSimpleName() + " cannot fork");
    }
    if (g.forking() && !forking.canEverHold(g)) {
      metrics.rejected++;
      return;
    }
    metrics.sequences += g.width();
    int admitted = g.forking() ? 1 : g.width();
    for (int i = 0; i < admitted; i++) {
      if (i == 0 && prepared != null) {
        preparing.add(g.sequences[0], prepared); // Note [Prompts prepared ahead]
      } else {
        kv.add(g.sequences[i]);
      }
      scheduler.add(g.sequences[i]);
    }
  }

  private final class Iteration extends Event {
    Iteration() {
      super(1);
    }

    @Override
    protected void actions() {
      if (async) {
        asyncIteration();
      } else {
        syncIteration();
      }
    }
  }

  /** A synchronous iteration: the end of the one in flight, then the plan of the next, which runs now. */
  private void syncIteration() {
    long now = sim.nowNanos();
    if (inFlight) {
      if (activationHandle >= 0) {
        activations.freeActivations(activationHandle);
        activationHandle = -1;
      }
      finishIteration(now);
      inFlight = false;
    }
    planInto(plan, planCost);
    if (plan.size() == 0) {
      idle();
      return;
    }
    if (activationBytesPerToken > 0) {
      long before = kv.modelledNanos();
      activationHandle = activations.allocateActivations(Math.multiplyExact(plan.totalTokens(), activationBytesPerToken));
      if (activationHandle < 0) {
        abortBatch();
        sim.scheduleAt(iteration, now);
        return;
      }
      planCost.allocatorNanos += kv.modelledNanos() - before;
    }
    start(now, planCost);
  }

  /**
   * An asynchronous iteration (Note [Asynchronous scheduling] in {@link VllmV1Scheduler}): the end
   * of the step in flight; then the step planned while it ran starts (planned now if there is none,
   * as after an idle spell), and the step after it is planned at once, before this one's tokens
   * are known. A request that arrived while the last step ran is first seen by that second plan.
   */
  private void asyncIteration() {
    long now = sim.nowNanos();
    if (inFlight) {
      finishIteration(now);
      inFlight = false;
    }
    if (next.size() == 0) {
      planInto(next, nextCost);
    }
    if (next.size() == 0) {
      idle();
      return;
    }
    swapPlans();
    planInto(next, nextCost);
    start(now, planCost);
  }

  /**
   * The step planned ahead becomes the step in flight, with its cost; the old one's plan and cost
   * are reused for the next plan, which a scheduler's {@code schedule} starts by clearing.
   */
  private void swapPlans() {
    StepPlan p = plan;
    plan = next;
    next = p;
    PlanCost c = planCost;
    planCost = nextCost;
    nextCost = c;
  }

  /** Plans a step into {@code p} and notes what its forward pass computes; under asynchronous scheduling its tokens are taken ahead. */
  private void planInto(StepPlan p, PlanCost cost) {
    long allocatorBefore = kv.modelledNanos();
    scheduler.schedule(p);
    cost.allocatorNanos = kv.modelledNanos() - allocatorBefore;
    cost.kvReadBytes = 0;
    cost.decodeTokens = 0;
    for (int i = 0; i < p.listed(); i++) {
      Sequence s = p.sequence(i);
      cost.kvReadBytes += (long) s.numComputedTokens() * kvBytesPerToken;
      // A sequence generating its next token (ForwardTimeModel's split of prefill and decode).
      if (p.tokens(i) == 1 && s.outputTokens() > 0) {
        cost.decodeTokens++;
      }
    }
    // Quiet decode steps (Note [Quiet decode steps] in QueueScheduler): one decode token each; a sum
    // of products by kvBytesPerToken is the product of the sum, in long arithmetic too
    cost.kvReadBytes += p.quietComputedTokens() * kvBytesPerToken;
    cost.decodeTokens += p.quiet();
    cost.totalTokens = p.totalTokens();
    cost.sequences = p.size();
    if (async && p.size() > 0) {
      scheduler.sampleAhead(p, output);
    }
  }

  /** Nothing was planned: the engine idles until the next arrival. */
  private void idle() {
    forkNanos = 0; // the engine idles: forks made as the last sequences finished overlap nothing
    if (scheduler.running() > 0 || scheduler.waiting() > 0) {
      throw new IllegalStateException("the scheduler planned nothing with " + scheduler.running() + " sequences running and "
          + scheduler.waiting() + " waiting: a request larger than the KV memory should have been rejected on arrival");
    }
    metrics.recordIdle(sim.nowNanos(), kv);
  }

  /** Starts the planned step {@link #plan} at {@code now}: metrics, checks, and its end after its duration. */
  private void start(long now, PlanCost cost) {
    metrics.recordIteration(now, plan, kv, scheduler.running(), scheduler.waiting(), scheduler.waitingForMemory());
    if (metrics.multiSequenceRequests > 0 && groupCounting != null) {
      groupCounting.sampleSharing();
    }
    if (check) {
      scheduler.catchUpAll();
      kv.checkInvariants();
    }
    long forwardNanos = forwardTime.forwardNanos(cost.totalTokens - cost.decodeTokens, cost.decodeTokens, cost.kvReadBytes, cost.sequences)
        + cost.allocatorNanos + forkNanos;
    forkNanos = 0;
    long durationNanos = iterationNanos(forwardNanos, forwardTime.engineOverheadNanos());
    inFlight = true;
    sim.scheduleAt(iteration, Math.addExact(now, Math.max(1, durationNanos)));
    if (progress != null && metrics.iterations % PROGRESS_EVERY == 0) {
      progress.update(metrics.iterations, metrics.finished);
    }
  }

  /**
   * An iteration's duration from its forward pass (with the allocator's and forks' modelled time)
   * and the engine's CPU overhead: the one place the two combine. Synchronously the CPU work and
   * the GPU step follow each other ({@code forward + overhead}); with asynchronous scheduling the
   * CPU plans the next step and takes the last one's output while the GPU runs this one, so the
   * step takes {@code max(forward, overhead)} (Note [Asynchronous scheduling] in {@link VllmV1Scheduler}).
   */
  private long iterationNanos(long forwardNanos, long overheadNanos) {
    return async ? Math.max(forwardNanos, overheadNanos) : Math.addExact(forwardNanos, overheadNanos);
  }

  /** What a planned step's forward pass computes, noted when it is planned (its sequences' counts move on after). */
  private static final class PlanCost {
    long totalTokens;
    long decodeTokens;
    long kvReadBytes;
    int sequences;
    long allocatorNanos;
  }

  /** The end of the iteration in flight: the scheduler takes its outcome (Note [Iteration contract] in {@link Scheduler}). */
  private void finishIteration(long now) {
    output.now = now;
    metrics.outputTokens += plan.quiet(); // each quiet decode step sampled one token, neither its first nor its last
    scheduler.updateFromOutput(plan, output);
    if (check) {
      scheduler.catchUpAll();
      kv.checkInvariants();
    }
  }

  /** What the engine gives and hears at the end of an iteration: token ids by the engine's rule, times and metrics. */
  private final class Output implements StepOutput {
    long now;

    @Override
    public int token(Sequence s, int outputIndex) {
      return FIRST_OUTPUT_TOKEN + outputIndex;
    }

    /** A sequence sampled its next token; the last sequence of a group to finish finishes the request. */
    @Override
    public void sampled(Sequence s, boolean finished) {
      SequenceGroup g = s.group;
      metrics.outputTokens++;
      if (s.firstTokenNanos < 0) { // the group's first token is no later than any of its sequences'
        s.firstTokenNanos = now;
        if (g.firstTokenNanos < 0) {
          g.firstTokenNanos = now;
        }
      }
      if (finished) {
        s.finishNanos = now;
        if (++g.finishedSequences == g.width()) {
          g.finishNanos = now;
          metrics.recordFinish(g);
        }
      }
    }

    /** A fork's modelled time goes to the next iteration. */
    @Override
    public void forked(Sequence source, Sequence target, boolean beamReplacement, long modelledNanos) {
      forkNanos += modelledNanos;
      if (beamReplacement) {
        metrics.beamReplacements++;
      }
    }
  }

  /**
   * Note [Activation OOM] in {@link #placeActivationsWithKv}: aborts every request with a sequence
   * in the planned batch; their sequences' memory is freed and they leave the running list.
   */
  private void abortBatch() {
    metrics.activationOoms++;
    for (int i = 0; i < plan.listed(); i++) {
      SequenceGroup g = plan.sequence(i).group;
      if (g.finishNanos >= 0) {
        continue;
      }
      g.finishNanos = sim.nowNanos();
      metrics.aborted++;
      for (Sequence s : g.sequences) {
        if (s.status() != Sequence.Status.FINISHED) {
          s.abort();
          kv.finish(s);
        }
      }
    }
    scheduler.removeFinished();
    if (check) {
      scheduler.catchUpAll();
      kv.checkInvariants();
    }
  }
}

package kvsim.serving;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import kvsim.alloc.paged.KvBlockManager;
import kvsim.alloc.paged.PagedRequest;
import kvsim.trace.Request;

/**
 * vLLM v1's scheduler ({@link VllmV1Scheduler}) over a block manager ({@link PagedKvManager} with
 * given tokens), driven one iteration at a time with the caller's token ids, so that a script can
 * be compared with vLLM step by step. No time passes: there is no roofline and no arrival process.
 *
 * <ul>
 *   <li>{@link #submit} queues a request with its prompt token ids, its {@code max_tokens} and
 *       optionally the token ids the model samples; without them the k-th output token (from 0) is
 *       {@link ServingEngine#FIRST_OUTPUT_TOKEN} {@code + k}, as in the serving engine.
 *   <li>{@link #step} runs one iteration through the same two calls as {@link ServingEngine}
 *       (Note [Iteration contract] in {@link Scheduler}): the scheduler plans it, then takes its
 *       outcome: every scheduled sequence that caught up samples one token, and a sequence that
 *       reached its {@code max_tokens} finishes and frees its blocks. That is vLLM's {@code
 *       EngineCore.step} ({@code vllm/v1/engine/core.py}), as its scheduler unit tests drive it.
 *   <li>With asynchronous scheduling ({@link SchedulerConfig#asyncScheduling}; Note [Asynchronous
 *       scheduling] in {@link VllmV1Scheduler}) a step is one call of vLLM's {@code
 *       EngineCore.step_with_batch_queue} with a queue of two: when requests remain it plans a
 *       step (its tokens taken ahead); if no step was in flight, that is all (the first step of a
 *       burst returns no output); otherwise it then takes the outcome of the step in flight,
 *       whose finished requests it names, and the step just planned is in flight.
 * </ul>
 */
public final class ScriptedServing {
  /** One sequence scheduled in a step: its tokens and the block ids it got (allocated or hit). */
  public record Scheduled(String req, int tokens, int[] newBlockIds) {}

  /** What one step did, sequences by name; {@code running} and {@code waiting} as the step left them. */
  public record StepResult(long step, List<Scheduled> scheduled, List<String> preempted, List<String> finished, List<String> running, List<String> waiting) {}

  private final PagedKvManager kv;
  private final VllmV1Scheduler scheduler;
  private final StepPlan plan = new StepPlan();
  /** Asynchronous scheduling: the step planned by an earlier call whose outcome is not taken yet. */
  private final StepPlan inFlight = new StepPlan();
  private boolean hasInFlight;
  private final Output output = new Output();
  private final Map<String, Sequence> byName = new HashMap<>();
  private final Map<Sequence, int[]> outputs = new IdentityHashMap<>();
  private long nextId;
  private long steps;

  /** A scheduler with these limits over {@code blocks} (a v1 block manager). */
  public ScriptedServing(KvBlockManager blocks, SchedulerConfig config) {
    this.kv = PagedKvManager.withGivenTokens(blocks);
    this.scheduler = new VllmV1Scheduler(config, kv);
  }

  /** Returns whether {@code name} is a request submitted here and not yet finished. */
  public boolean manages(String name) {
    return byName.containsKey(name);
  }

  /**
   * Queues a request. {@code output}, when not null, holds the {@code maxTokens} token ids the model
   * samples. The name must be new to the block manager.
   */
  public void submit(String name, int[] prompt, int maxTokens, int[] output) {
    if (maxTokens < 1 || prompt.length < 1 || (output != null && output.length != maxTokens)) {
      throw new IllegalArgumentException("a request needs a prompt, max_tokens ≥ 1 and, when given, max_tokens output tokens");
    }
    Sequence s = new Sequence(Request.of(nextId++, 0, prompt.length, maxTokens), maxTokens);
    kv.add(s, name, prompt);
    scheduler.add(s);
    byName.put(name, s);
    if (output != null) {
      outputs.put(s, output.clone());
    }
  }

  /** Runs one iteration (one call of vLLM's engine core) and returns what it did. */
  public StepResult step() {
    if (scheduler.asyncScheduling()) {
      return asyncStep();
    }
    List<Scheduled> scheduled = plan();
    List<String> preempted = preempted();
    // The end of the iteration, the scheduler's as in ServingEngine (Note [Iteration contract] in Scheduler).
    output.finished = new ArrayList<>();
    scheduler.updateFromOutput(plan, output);
    return result(scheduled, preempted);
  }

  /**
   * One call of {@code EngineCore.step_with_batch_queue} with a batch queue of two (vLLM at commit
   * ec5ef0a): plan a step when requests remain; return at once when nothing was in flight and
   * the step planned runs or requests remain; else take the outcome of the step in flight.
   */
  private StepResult asyncStep() {
    output.finished = new ArrayList<>();
    boolean planned = false;
    List<Scheduled> scheduled = List.of();
    List<String> preempted = List.of();
    if (scheduler.running() > 0 || scheduler.waiting() > 0) {
      scheduled = plan();
      preempted = preempted();
      scheduler.sampleAhead(plan, output);
      planned = true;
      if (!hasInFlight && (plan.size() > 0 || scheduler.running() > 0 || scheduler.waiting() > 0)) {
        // The queue had room: the engine core does not wait for an output (an empty step is queued too).
        inFlight.copyFrom(plan);
        hasInFlight = true;
        return result(scheduled, preempted);
      }
      if (!hasInFlight) {
        return result(scheduled, preempted); // an empty step with nothing left: its output is nothing
      }
    }
    if (hasInFlight) {
      scheduler.updateFromOutput(inFlight, output);
      hasInFlight = planned;
      if (planned) {
        inFlight.copyFrom(plan);
      }
    }
    return result(scheduled, preempted);
  }

  /** Plans the next step into {@link #plan} and returns what each scheduled sequence got. */
  private List<Scheduled> plan() {
    Map<Sequence, Integer> blocksBefore = new IdentityHashMap<>();
    for (Sequence s : scheduler.runningSequences()) {
      blocksBefore.put(s, PagedKvManager.requestOf(s).numBlocks());
    }
    scheduler.schedule(plan);
    List<Scheduled> scheduled = new ArrayList<>(plan.size());
    for (int i = 0; i < plan.listed(); i++) {
      Sequence s = plan.sequence(i);
      PagedRequest r = PagedKvManager.requestOf(s);
      int[] table = r.blockTable();
      int before = blocksBefore.getOrDefault(s, 0);
      scheduled.add(new Scheduled(r.id(), plan.tokens(i), Arrays.copyOfRange(table, before, table.length)));
    }
    return scheduled;
  }

  private List<String> preempted() {
    List<String> preempted = new ArrayList<>(plan.preempted());
    for (int i = 0; i < plan.preempted(); i++) {
      preempted.add(name(plan.preemptedSequence(i)));
    }
    return preempted;
  }

  private StepResult result(List<Scheduled> scheduled, List<String> preempted) {
    List<String> running = new ArrayList<>();
    for (Sequence s : scheduler.runningSequences()) {
      running.add(name(s));
    }
    List<String> waiting = new ArrayList<>();
    for (Sequence s : scheduler.waitingSequences()) {
      waiting.add(name(s));
    }
    return new StepResult(steps++, scheduled, preempted, output.finished, running, waiting);
  }

  /** The script's side of an iteration's end: its given token ids (or the engine's rule), and the requests that finished. */
  private final class Output implements StepOutput {
    List<String> finished;

    @Override
    public int token(Sequence s, int k) {
      int[] given = outputs.get(s);
      return given != null ? given[k] : ServingEngine.FIRST_OUTPUT_TOKEN + k;
    }

    @Override
    public void sampled(Sequence s, boolean done) {
      if (done) {
        String name = name(s);
        byName.remove(name);
        outputs.remove(s);
        finished.add(name);
      }
    }
  }

  private static String name(Sequence s) {
    return PagedKvManager.requestOf(s).id();
  }

  /** Checks the KV manager and its block manager; throws when broken. */
  public void checkInvariants() {
    kv.checkInvariants();
  }
}

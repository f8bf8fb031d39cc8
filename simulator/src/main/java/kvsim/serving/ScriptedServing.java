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
 *   <li>{@link #step} runs one iteration as {@link ServingEngine} does: the scheduler plans it,
 *       then every scheduled sequence that caught up samples one token, and a sequence that reached
 *       its {@code max_tokens} finishes and frees its blocks.
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

  /** Runs one iteration and returns what it did. */
  public StepResult step() {
    Map<Sequence, Integer> blocksBefore = new IdentityHashMap<>();
    for (Sequence s : scheduler.runningList) {
      blocksBefore.put(s, PagedKvManager.requestOf(s).numBlocks());
    }
    scheduler.schedule(plan);
    List<Scheduled> scheduled = new ArrayList<>(plan.size());
    for (int i = 0; i < plan.size(); i++) {
      Sequence s = plan.sequence(i);
      PagedRequest r = PagedKvManager.requestOf(s);
      int[] table = r.blockTable();
      int before = blocksBefore.getOrDefault(s, 0);
      scheduled.add(new Scheduled(r.id(), plan.tokens(i), Arrays.copyOfRange(table, before, table.length)));
    }
    List<String> preempted = new ArrayList<>(plan.preempted());
    for (int i = 0; i < plan.preempted(); i++) {
      preempted.add(name(plan.preemptedSequence(i)));
    }
    // The end of the iteration, as in ServingEngine (Sequence.sample): a caught-up sequence samples
    // one token; one that reached max_tokens finishes and is freed.
    List<String> finished = new ArrayList<>();
    for (int i = 0; i < plan.size(); i++) {
      Sequence s = plan.sequence(i);
      if (!s.caughtUp()) {
        continue;
      }
      int k = s.outputTokens;
      int[] given = outputs.get(s);
      String name = name(s);
      if (s.sample(kv, given != null ? given[k] : ServingEngine.FIRST_OUTPUT_TOKEN + k)) {
        byName.remove(name);
        outputs.remove(s);
        finished.add(name);
      }
    }
    scheduler.removeFinished();
    List<String> running = new ArrayList<>();
    for (Sequence s : scheduler.runningList) {
      running.add(name(s));
    }
    List<String> waiting = new ArrayList<>();
    for (Sequence s : scheduler.waitingQueue) {
      waiting.add(name(s));
    }
    return new StepResult(steps++, scheduled, preempted, finished, running, waiting);
  }

  private static String name(Sequence s) {
    return PagedKvManager.requestOf(s).id();
  }

  /** Checks the KV manager and its block manager; throws when broken. */
  public void checkInvariants() {
    kv.checkInvariants();
  }
}

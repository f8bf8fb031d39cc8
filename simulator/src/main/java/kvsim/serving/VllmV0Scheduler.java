package kvsim.serving;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kvsim.alloc.paged.OpLog;

/**
 * vLLM v0's default scheduler ({@code Scheduler._schedule_default} in {@code vllm/core/scheduler.py},
 * vLLM at commit 1fb9c1b, between v0.6.2 and v0.6.3) with chunked prefill off, over sequence groups:
 *
 * <ul>
 *   <li>Prefills first (step 1 of {@code _schedule_default}), and only while no group is swapped out: waiting sequences in
 *       FCFS order are admitted whole (no chunking) while the watermark test says OK ({@code BlockSpaceManagerV2.can_allocate}), their
 *       tokens fit what is left of {@code max_num_batched_tokens} and the group's most sequences
 *       ({@code get_max_num_running_seqs}: its width) fit beside the running ones under {@code
 *       max_num_seqs}. LATER stops admission; NEVER ignores the request (vLLM finishes it as
 *       {@code FINISHED_IGNORED}), counted here among the rejected requests. An iteration that
 *       prefills runs no decode.
 *   <li>Otherwise every running sequence decodes one token (step 2), in running order, a
 *       group's sequences side by side; when a slot cannot be allocated (decode growth has no
 *       watermark; copy-on-write copies count) the last running group is preempted until it can,
 *       or the group preempts itself (its sequences already planned are taken out of the plan).
 *   <li>Preemption mode ({@code Scheduler._preempt}): a group with one running sequence is recomputed (its blocks freed,
 *       its computed tokens reset, put at the front of the waiting queue); a group with several
 *       (parallel samples or beams after the fork) is swapped out whole to the host pool ({@code
 *       swap_space}) and queued as swapped. A swap-out the host pool cannot hold aborts the run, as
 *       vLLM raises {@code RuntimeError}.
 *   <li>Swap-in (step 3), when the iteration preempted nothing: swapped groups in FIFO order
 *       while the watermark says OK and their sequences fit under {@code max_num_seqs}; each swapped-in
 *       sequence decodes in the same iteration (a slot it cannot get waits for the next). LATER
 *       stops the loop; NEVER (a group larger than the device allows) aborts the run.
 * </ul>
 */
public final class VllmV0Scheduler extends QueueScheduler {
  /**
   * vLLM v0's scheduler as a system part: reads {@code max-num-seqs} and {@code watermark}; its
   * token budget is at least {@code max_model_len} (v0 requires it without chunked prefill), chunked
   * prefill off; preemption by recompute, by swap for groups of several sequences.
   */
  public static final SchedulerFactory FACTORY = new SchedulerFactory() {
    @Override
    public String name() {
      return "vllm-v0";
    }

    @Override
    public Set<String> reads() {
      return Set.of("max-num-seqs", "watermark");
    }

    @Override
    public SchedulerConfig effective(SchedulerConfig c) {
      return new SchedulerConfig(Math.max(c.maxNumBatchedTokens(), c.maxModelLen()), c.maxNumSeqs(), c.maxModelLen(), false, 0, c.watermark());
    }

    @Override
    public Scheduler create(SchedulerConfig config, KvManager kv) {
      return new VllmV0Scheduler(config, kv);
    }

    @Override
    public void describe(SchedulerConfig config, Map<String, Object> parts) {
      parts.put("watermark", config.watermark());
      parts.put("max_num_batched_tokens", config.maxNumBatchedTokens());
      parts.put("max_num_seqs", config.maxNumSeqs());
      parts.put("max_model_len", config.maxModelLen());
      parts.put("enable_chunked_prefill", false);
      parts.put("preemption", "recompute");
      parts.put("preemption_multi_sequence", "swap");
    }
  };

  private final KvManager.Watermarked watermarked;
  private final KvManager.Swapping swapping;
  private final ArrayDeque<SequenceGroup> swapped = new ArrayDeque<>();
  private int swappedSequences;
  private long ignored;

  /**
   * A scheduler with these limits over a KV manager that admits under a watermark and swaps (a v0
   * paged KV manager); throws when {@code kv} lacks either capability.
   */
  public VllmV0Scheduler(SchedulerConfig config, KvManager kv) {
    super(config, kv);
    this.watermarked = KvManager.require(kv, KvManager.Watermarked.class, "vLLM v0's scheduler");
    this.swapping = KvManager.require(kv, KvManager.Swapping.class, "vLLM v0's scheduler");
  }

  @Override
  public long ignored() {
    return ignored;
  }

  /** Returns the sequences waiting, swapped-out ones included. */
  @Override
  public int waiting() {
    return waitingQueue.size() + swappedSequences;
  }

  @Override
  public void schedule(StepPlan plan) {
    plan.clear();
    admissionStopped(false);
    long budget = config.maxNumBatchedTokens();
    while (swapped.isEmpty() && !waitingQueue.isEmpty() && runningList.size() + waitingQueue.peekFirst().group.width() <= config.maxNumSeqs()) {
      Sequence s = waitingQueue.peekFirst();
      if (s.numTokens() > budget) {
        break;
      }
      OpLog.Admission verdict = watermarked.admitWhole(s);
      if (verdict == OpLog.Admission.LATER) {
        admissionStopped(true);
        break;
      }
      waitingQueue.pollFirst();
      if (verdict == OpLog.Admission.NEVER) {
        ignored++;
        s.ignore();
        kv.finish(s);
        continue;
      }
      runningList.add(s);
      s.admit();
      plan.add(s, s.numTokens());
      budget -= s.numTokens();
    }
    if (plan.size() > 0) {
      return;
    }
    int i = 0;
    while (i < runningList.size()) {
      Sequence s = runningList.get(i);
      int end = i;
      while (end + 1 < runningList.size() && runningList.get(end + 1).group == s.group) {
        end++;
      }
      boolean scheduled = end == i ? decodeOne(s, plan) : decodeGroup(runningList.subList(i, end + 1), plan);
      if (!scheduled) {
        break;
      }
      i = end + 1;
    }
    if (plan.preempted() == 0) {
      swapIn(plan);
    }
  }

  /**
   * One running sequence alone in its group: allocates its slot, preempting the last running group
   * while the allocation fails. Returns false when it preempted itself.
   */
  private boolean decodeOne(Sequence s, StepPlan plan) {
    int n = s.numTokens() - s.numComputedTokens();
    if (n <= 0) {
      return true;
    }
    while (!kv.allocate(s, n)) {
      SequenceGroup victim = runningList.get(runningList.size() - 1).group;
      plan.countPreemption(preemptGroup(victim));
      if (victim == s.group) {
        return false;
      }
    }
    plan.add(s, n);
    return true;
  }

  /**
   * A group's running sequences ({@code members}, a view of the running list): preempts the last
   * running group while the free blocks do not cover the whole group's worst case, then allocates
   * each member's slot. Returns false when the group preempted itself.
   */
  private boolean decodeGroup(List<Sequence> members, StepPlan plan) {
    SequenceGroup g = members.get(0).group;
    List<Sequence> copy = new ArrayList<>(members);
    while (!watermarked.canAppend(copy)) {
      SequenceGroup victim = runningList.get(runningList.size() - 1).group;
      plan.countPreemption(preemptGroup(victim));
      if (victim == g) {
        return false;
      }
    }
    for (Sequence m : copy) {
      int n = m.numTokens() - m.numComputedTokens();
      if (n <= 0) {
        continue;
      }
      if (!kv.allocate(m, n)) {
        throw new IllegalStateException(m + ": its group's worst case fits the free blocks but its slot could not be allocated");
      }
      plan.add(m, n);
    }
    return true;
  }

  /**
   * Preempts the last running group, whose sequences are the tail of the running list: by swap when
   * it runs several sequences, by recompute otherwise. Returns the sequence to count (the lead of a
   * swapped group).
   */
  private Sequence preemptGroup(SequenceGroup g) {
    List<Sequence> members = new ArrayList<>();
    while (!runningList.isEmpty() && runningList.get(runningList.size() - 1).group == g) {
      members.add(0, runningList.remove(runningList.size() - 1));
    }
    if (members.size() == 1) {
      preemptByRecompute(members.get(0));
      return members.get(0);
    }
    if (!swapping.swapOut(members)) {
      throw new IllegalStateException("out of swap space: the host pool cannot hold the blocks of request " + g.request.id() + "'s " + members.size()
          + " sequences (vLLM v0 aborts with RuntimeError; give a larger swap space)");
    }
    for (Sequence m : members) {
      m.swapOut();
    }
    swapped.addLast(g);
    swappedSequences += members.size();
    return members.get(0);
  }

  private void swapIn(StepPlan plan) {
    while (!swapped.isEmpty()) {
      SequenceGroup g = swapped.peekFirst();
      List<Sequence> members = new ArrayList<>();
      for (Sequence m : g.sequences) {
        if (m.status() == Sequence.Status.SWAPPED) {
          members.add(m);
        }
      }
      if (runningList.size() + members.size() > config.maxNumSeqs()) {
        break;
      }
      OpLog.Admission verdict = swapping.swapIn(members);
      if (verdict == OpLog.Admission.LATER) {
        admissionStopped(true);
        break;
      }
      if (verdict == OpLog.Admission.NEVER) {
        throw new IllegalStateException("request " + g.request.id() + " can never be swapped back in: its blocks exceed the device's less the watermark");
      }
      swapped.pollFirst();
      swappedSequences -= members.size();
      for (Sequence m : members) {
        m.swapIn();
        runningList.add(m);
        int n = m.numTokens() - m.numComputedTokens();
        if (n > 0 && kv.allocate(m, n)) {
          plan.add(m, n);
        }
      }
    }
  }
}

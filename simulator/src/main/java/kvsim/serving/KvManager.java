package kvsim.serving;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import kvsim.alloc.paged.OpLog;
import kvsim.trace.Request;

/**
 * The KV-cache memory of a serving system as its scheduler sees it: a sequence asks for slots for
 * its next tokens and gets them or not. Implementations put the KV of each sequence into an
 * allocator under test: vLLM's block manager (paged), a contiguous allocator with a reservation
 * policy, or a block allocator.
 *
 * <p>Contract: {@link #allocate} either succeeds or returns false and changes nothing; memory
 * comes back on {@link #preempt} and {@link #finish}. {@link #breakdown} accounts for every slot of
 * the KV region, in tokens.
 *
 * <p>Note [KV manager capabilities]: the interface is the core every scheduler uses; what only some
 * managers can do (fork a group's sequences, admit under a watermark, swap, hold activations,
 * report memory operations, count group sharing) is a {@link KvCapability} the manager implements
 * and a part asks for by type ({@link #capability}) when it is built, never a method that throws.
 */
public interface KvManager {

  /** Registers a sequence that has arrived (its prompt tokens; nothing allocated). */
  void add(Sequence s);

  /**
   * For a waiting sequence with nothing computed: returns the leading tokens whose KV the cache
   * already holds (prefix hits), remembered for the next {@link #allocate}. 0 without a cache.
   */
  int lookup(Sequence s);

  /**
   * Finds slots for {@code numNewTokens} more computed tokens of {@code s} (after the hits of its
   * last {@link #lookup}, for a waiting sequence). Returns false, changing nothing, when memory
   * does not suffice. On success the sequence's computed tokens advance by hits plus new tokens.
   */
  boolean allocate(Sequence s, int numNewTokens);

  /** Appends a sampled token to a running sequence. */
  void append(Sequence s, int token);

  /** Frees a running sequence's memory for recompute: it will prefill again from nothing computed. */
  void preempt(Sequence s);

  /** Frees a finished sequence's memory. */
  void finish(Sequence s);

  /**
   * Returns this manager as capability {@code type} ({@link Forking}, {@link Watermarked}, {@link
   * Swapping}, {@link Activations}, {@link Observable}, {@link GroupCounting}, {@link
   * FullSequenceFit}, {@link PreparesPrompts}), or empty when it
   * has not got it. Schedulers and the engine ask once, when they are built, and keep the answer.
   */
  default <T extends KvCapability> Optional<T> capability(Class<T> type) {
    return type.isInstance(this) ? Optional.of(type.cast(this)) : Optional.empty();
  }

  /**
   * Returns capability {@code type} of {@code kv}, or throws naming {@code who} needs it: for a
   * part that cannot work without it (a system assembled wrongly is a programming error).
   */
  static <T extends KvCapability> T require(KvManager kv, Class<T> type, String who) {
    return kv.capability(type).orElseThrow(() -> new IllegalStateException(who + " needs a KV manager that is " + type.getSimpleName()
        + "; " + kv.getClass().getSimpleName() + " is not"));
  }

  /**
   * Prompts prepared ahead, on another thread (Note [Prompts prepared ahead] in {@link
   * ServingEngine}): what adding a sequence computes from its request alone (a paged manager's
   * prompt block hashes), computed by a {@link PromptPreparer} before the request arrives.
   */
  interface PreparesPrompts extends KvCapability {
    /** Returns a new preparer, for one other thread, or null when this manager has nothing to prepare. */
    PromptPreparer preparer();

    /**
     * Registers {@code s} exactly as {@link KvManager#add} does, taking what {@code prepared} holds
     * instead of computing it; {@code prepared} is what a preparer of this manager returned for
     * {@code s}'s request, or null (then it is {@link KvManager#add}).
     */
    void add(Sequence s, Object prepared);
  }

  /** Prepares requests for a {@link PreparesPrompts} manager, on the one thread that owns it. */
  interface PromptPreparer {
    /**
     * Returns what the manager's {@link PreparesPrompts#add} takes for the lead sequence of request
     * {@code r} cut to {@code maxOutputTokens} output tokens, or null for nothing prepared. It only
     * computes: it changes no state the manager reads.
     */
    Object prepare(Request r, int maxOutputTokens);
  }

  /** What a KV manager may offer beyond the core, asked for by type with {@link #capability}. */
  interface KvCapability {}

  /**
   * Forking: gives a group's sequences copies of one another's KV (parallel sampling, beam search),
   * as vLLM v0's block managers' {@code fork} at commit 1fb9c1b ({@code
   * BlockSpaceManagerV2.fork} in {@code vllm/core/block_manager_v2.py}).
   */
  interface Forking extends KvCapability {
    /**
     * Gives {@code target}, a sequence of the same group, a copy of {@code source}'s KV: paged
     * managers share the blocks by reference (copy-on-write), contiguous ones copy into the
     * target's own buffer. Whatever the target held before is given up. The caller copies the
     * token counts ({@link Sequence#copyProgress}).
     */
    void fork(Sequence source, Sequence target);

    /**
     * Returns whether the KV memory could hold the whole forking group {@code g} alone, every
     * sequence at its final length without sharing; a group that fails this is refused on arrival,
     * as a prompt of {@code max_model_len} tokens is, since it might never progress. True by default
     * (a manager that reserves at admission finds out then).
     */
    default boolean canEverHold(SequenceGroup g) {
      return true;
    }
  }

  /**
   * Whole admission under vLLM v0's watermark ({@code BlockSpaceManagerV2.can_allocate} and {@code
   * can_append_slots} in {@code vllm/core/block_manager_v2.py} at commit 1fb9c1b).
   */
  interface Watermarked extends KvCapability {
    /**
     * Admits a waiting sequence whole: the watermark test on the blocks of all its tokens; on OK
     * its slots are allocated and its computed tokens are its tokens. Returns the verdict.
     */
    OpLog.Admission admitWhole(Sequence s);

    /** Returns whether the free memory suffices for one decode step of each of {@code sequences}, worst case. */
    boolean canAppend(List<Sequence> sequences);
  }

  /**
   * Swapping a group out to host memory and back (vLLM v0's {@code Scheduler._swap_out} and {@code
   * _swap_in} in {@code vllm/core/scheduler.py} at commit 1fb9c1b).
   */
  interface Swapping extends KvCapability {
    /** Moves the sequences' KV to the host; false, changing nothing, when the host pool cannot hold it. */
    boolean swapOut(List<Sequence> sequences);

    /** Moves swapped sequences' KV back; returns the watermark's verdict (OK: done). */
    OpLog.Admission swapIn(List<Sequence> sequences);
  }

  /**
   * The naive memory plan: an iteration's activations and temporaries in the KV's own allocator.
   * Only managers over a general-purpose allocator have it.
   */
  interface Activations extends KvCapability {
    /** Allocates {@code bytes} of activations; returns a handle, or -1 when the allocator refuses. */
    long allocateActivations(long bytes);

    /** Frees activations allocated by {@link #allocateActivations}. */
    void freeActivations(long handle);
  }

  /**
   * vLLM v1's full-prompt admission gate ({@code KVCacheManager.can_fit_full_sequence} in {@code
   * vllm/v1/core/kv_cache_manager.py} at commit ec5ef0a; Note [Full-prompt admission gate] in
   * {@link VllmV1Scheduler}), asked by that scheduler when {@code scheduler-reserve-full-isl} is on.
   */
  interface FullSequenceFit extends KvCapability {
    /**
     * For a waiting sequence just looked up ({@link #lookup}): returns whether the free memory
     * holds its whole current sequence (its tokens, capped at {@code max_model_len}) beyond its
     * prefix hits, not just this step's chunk. Changes nothing.
     */
    boolean canFitFullSequence(Sequence s);
  }

  /**
   * Quiet decode steps (Note [Quiet decode steps] on {@link QueueScheduler}): a running sequence's
   * single-token decode steps that change nothing in the manager but counts, taken by the scheduler
   * without the manager and applied later at once.
   */
  interface QuietDecodes extends KvCapability {
    /**
     * Returns how many decode steps in a row {@code s} can take from now, each allocating one token
     * and appending the one sampled, that change nothing here but what only {@code s}'s own later
     * steps read: its counts and tokens (a paged manager takes and fills no block). {@code s} runs
     * with one token to compute, and its record here is up to date.
     */
    int quietDecodeSteps(Sequence s);

    /**
     * The manager's share of {@code steps} quiet decode steps of one plan, whichever sequences took
     * them: each step's allocation's modelled time and its move in the breakdown.
     */
    void tookQuietSteps(int steps);

    /**
     * Brings the manager's counts of {@code s} up to the sequence's own after the quiet steps it
     * took since: its computed tokens, and its tokens, appended with the ids {@code tokens} gives.
     * Nothing when it took none.
     */
    void catchUp(Sequence s, StepOutput tokens);
  }

  /** Memory observation: the allocator operations the manager makes, for L1 traces. */
  interface Observable extends KvCapability {
    /**
     * Tells {@code listener} of every allocation and free the manager makes on its allocator from
     * now on (paged managers: each block taken and released; contiguous ones: each buffer, refused
     * ones included).
     */
    void listen(MemoryListener listener);
  }

  /** Counters of sequence groups (forks, copies, swaps, sharing), reported for runs with multi-sequence requests. */
  interface GroupCounting extends KvCapability {
    /** Adds the current iteration to the manager's sharing measure, if it has one (called once per iteration). */
    default void sampleSharing() {}

    /** Returns the manager's group counters by result-file name. */
    Map<String, Long> groupCounters();
  }

  /** Returns the most tokens one sequence can ever hold (the whole KV region for one sequence). */
  long capacityTokens();

  /** Returns the modelled nanoseconds the allocator spent so far, for the iteration's critical path. */
  long modelledNanos();

  /**
   * Writes the KV region's slots, in tokens, by use (the vLLM paper's Fig. 2 categories) into
   * {@code out}, five slots that the caller zeroes first: [0] token states (slots holding a computed
   * token), [1] reserved for tokens the sequence will still produce, [2] internal fragmentation
   * (held by a sequence but never to be used), [3] free (what the allocator could still hand out),
   * [4] the rest: memory neither a sequence nor the free pool holds (allocator rounding and
   * metadata, blocks set aside, activations of the naive plan). A manager that cannot tell free
   * from the rest writes all of it into [3]. The five sum to the region's slots; which free slots
   * are idle and which are external fragmentation is the metrics' call (Note [Idle or fragmented]
   * in {@link ServingMetrics}).
   */
  void breakdown(long[] out);

  /** Returns the manager's own counters by result-file name, for the run's summary (empty by default). */
  default Map<String, Long> counters() {
    return Map.of();
  }

  /** Checks the manager and its allocator; throws when broken. */
  void checkInvariants();
}

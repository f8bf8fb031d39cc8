package kvsim.serving;

import java.util.Map;

/**
 * The KV-cache memory of a serving system as its scheduler sees it: a sequence asks for slots for
 * its next tokens and gets them or not. Implementations put the KV of each sequence into an
 * allocator under test: vLLM's block manager (paged), a contiguous allocator with a reservation
 * policy, or a block allocator.
 *
 * <p>Contract: {@link #allocate} either succeeds or returns false and changes nothing; memory
 * comes back on {@link #preempt} and {@link #finish}. {@link #breakdown} accounts for every slot of
 * the KV region, in tokens.
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
   * Gives {@code target}, a sequence of the same group, a copy of {@code source}'s KV (a fork for
   * parallel sampling or beam search, as vLLM v0's block managers' {@code fork} at commit
   * 1fb9c1b): paged managers share the blocks by reference
   * (copy-on-write), contiguous ones copy into the target's own buffer. Whatever the target held
   * before is given up. The caller copies the token counts ({@link Sequence#copyProgress}).
   */
  default void fork(Sequence source, Sequence target) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot fork sequences");
  }

  /**
   * Returns whether the KV memory could hold the whole forking group {@code g} alone, every
   * sequence at its final length without sharing; a group that fails this is refused on arrival,
   * as a prompt of {@code max_model_len} tokens is, since it might never progress. True by default
   * (a manager that reserves at admission finds out then).
   */
  default boolean canEverHold(SequenceGroup g) {
    return true;
  }

  /**
   * Tells {@code listener} of every allocation and free the manager makes on its allocator from
   * now on (paged managers: each block taken and released; contiguous ones: each buffer, refused
   * ones included).
   */
  default void listen(MemoryListener listener) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot report its memory operations");
  }

  /**
   * The naive memory plan: allocates an iteration's activations and temporaries of {@code bytes}
   * in the KV's own allocator; returns a handle, or -1 when the allocator refuses. Only managers
   * over a general-purpose allocator can.
   */
  default long allocateActivations(long bytes) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no activations");
  }

  /** Frees activations allocated by {@link #allocateActivations}. */
  default void freeActivations(long handle) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " keeps no activations");
  }

  /** Adds the current iteration to the manager's sharing measure, if it has one (called once per iteration). */
  default void sampleSharing() {}

  /**
   * Returns the manager's counters of sequence groups (forks, copies, swaps, sharing) by result-file
   * name, reported for runs with multi-sequence requests (empty by default).
   */
  default Map<String, Long> groupCounters() {
    return Map.of();
  }

  /** Returns the most tokens one sequence can ever hold (the whole KV region for one sequence). */
  long capacityTokens();

  /** Returns the modelled nanoseconds the allocator spent so far, for the iteration's critical path. */
  long modelledNanos();

  /**
   * Writes the KV region's slots, in tokens, by use (the vLLM paper's Fig. 2 categories) into
   * {@code out}: [0] token states (slots holding a computed token), [1] reserved for tokens the
   * sequence will still produce, [2] internal waste (held but never to be used), [3] external waste
   * (the rest: free memory, allocator overhead); the four sum to the region's slots.
   */
  void breakdown(long[] out);

  /** Returns the manager's own counters by result-file name, for the run's summary (empty by default). */
  default Map<String, Long> counters() {
    return Map.of();
  }

  /** Checks the manager and its allocator; throws when broken. */
  void checkInvariants();
}

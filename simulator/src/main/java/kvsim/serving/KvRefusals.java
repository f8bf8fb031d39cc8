package kvsim.serving;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.alloc.paged.KvBlockManager;

/**
 * A KV manager's refusals of memory to running sequences, and its memory's layout, for a snapshot
 * at the first OOM of a serving run ({@code serving --snapshot-at-oom}; Note [Serving OOM]).
 *
 * <p>Note [Serving OOM]: a serving system's OOM is a refusal of KV memory that stops a sequence
 * already running: vLLM's schedulers then preempt (v1 by recompute, v0 by recompute or swap),
 * Orca's stalls the sequence, and under the naive memory plan a refused activation allocation
 * aborts the batch. A waiting request refused at admission only waits: that is queueing, not an
 * OOM. Paged managers: a running sequence's {@code allocate_slots} finds too few free blocks, or v0's
 * {@code can_append_slots} says the group's worst case does not fit (reason {@code no_memory}: a
 * block pool does not fragment). Contiguous managers and vAttention: the allocator refuses a
 * running sequence's growth or its next step (its own reason, {@code fragmentation} when the free
 * bytes sufficed), or the activations. The listener hears the refusal before anything is freed or
 * rolled back.
 */
public interface KvRefusals extends KvManager.KvCapability {
  /** Hears each refusal of memory to a running sequence (Note [Serving OOM]). */
  @FunctionalInterface
  interface Listener {
    /** {@code sizeBytes} were asked for and refused for {@code reason}; the manager's state is as at the refusal. */
    void refused(long sizeBytes, OomReason reason);
  }

  /** Tells {@code listener} of every refusal from now on (one listener; a later call replaces it). */
  void listenRefusals(Listener listener);

  /** Returns the KV memory's segments and blocks as they are now, in PyTorch's snapshot terms. */
  List<SegmentLayout> layout();

  /**
   * Returns a block pool's layout: one segment of {@code numBlocks × blockBytes} from address 0,
   * block {@code b} at {@code b × blockBytes}, free (inactive) when it is in the free queue (cached
   * blocks that may be evicted included), else allocated (v1's null block too).
   */
  static List<SegmentLayout> blockPoolLayout(KvBlockManager blocks) {
    int n = blocks.config().numBlocks();
    long blockBytes = blocks.config().blockBytes();
    boolean[] free = new boolean[n];
    for (int b : blocks.freeQueue()) {
      free[b] = true;
    }
    List<SegmentLayout.Block> out = new ArrayList<>(n);
    for (int b = 0; b < n; b++) {
      out.add(new SegmentLayout.Block(b * blockBytes, blockBytes, free[b] ? 0 : blockBytes,
          free[b] ? SegmentLayout.State.INACTIVE : SegmentLayout.State.ACTIVE_ALLOCATED));
    }
    return List.of(new SegmentLayout(0, n * blockBytes, "paged-" + blockBytes, 0, false, List.copyOf(out)));
  }

  /** Returns the bytes of the layout's free (inactive) blocks. */
  static long freeBytes(List<SegmentLayout> layout) {
    return layout.stream().flatMap(s -> s.blocks().stream()).filter(b -> b.state() == SegmentLayout.State.INACTIVE)
        .mapToLong(SegmentLayout.Block::sizeBytes).sum();
  }
}

package kvsim.serving;

import kvsim.core.Tag;

/**
 * Hears every memory operation a KV manager makes on the allocator under test: allocations with
 * their sizes (refused ones too, so that a replay meets the same refusals) and frees. Ids are the
 * manager's own, never reused while live. The serving engine stamps each operation with the
 * simulated time and writes it as an L1 trace event.
 */
public interface MemoryListener {
  /** An allocation of {@code sizeBytes} tagged {@code tag}, splittable (a paged block) or not (a contiguous buffer). */
  void allocated(long id, long sizeBytes, Tag tag, boolean splittable);

  /** The free of a live allocation. */
  void freed(long id);
}

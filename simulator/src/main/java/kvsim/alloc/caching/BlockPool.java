package kvsim.alloc.caching;

import java.util.TreeSet;

/**
 * A set of free blocks (spec §1, §4.3): the small pool (rounded sizes up to 1 MiB, 2 MiB segments)
 * or the large pool. Mapped free blocks are ordered by (stream, size, tie-break); the unmapped
 * ranges of expandable segments by (stream, address).
 */
final class BlockPool {
  final boolean small;
  final TreeSet<Block> blocks;
  final TreeSet<Block> unmapped = new TreeSet<>(TieBreak::compareByStreamAddress);
  /** Cache searches in this pool, counted only while garbage collection is active (spec §6.3). */
  long getFreeBlocksCallCount;

  BlockPool(boolean small, TieBreak tieBreak) {
    this.small = small;
    this.blocks = new TreeSet<>(tieBreak.sizeOrder());
  }

  /** Inserts a free mapped block and stamps its age base (PyTorch's insert_into_blocks). */
  void insert(Block b) {
    b.gcCountBase = getFreeBlocksCallCount;
    blocks.add(b);
  }

  String name() {
    return small ? "small" : "large";
  }
}

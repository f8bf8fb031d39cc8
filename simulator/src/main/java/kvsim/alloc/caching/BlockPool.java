package kvsim.alloc.caching;

import java.util.HashSet;
import java.util.Set;
import java.util.TreeSet;

/**
 * A set of free blocks (a pool of PyTorch's {@code CUDACachingAllocator.cpp}): the small pool
 * (rounded sizes up to 1 MiB, 2 MiB segments) or the large pool. Mapped free blocks are ordered by
 * (stream, size, tie-break); the unmapped ranges of expandable segments by (stream, address).
 */
final class BlockPool {
  final boolean small;
  final TreeSet<Block> blocks;
  final TreeSet<Block> unmapped = new TreeSet<>(TieBreak::compareByStreamAddress);
  /** Cache searches in this pool, counted only while garbage collection is active (ages). */
  long getFreeBlocksCallCount;
  /** The classic segments of this pool held as one whole free block (Note [Releasable segments]). */
  final Set<Segment> wholeSegments = new HashSet<>();
  /**
   * The free mapped blocks of expandable segments that hold at least one whole page, in pool order:
   * the blocks of which {@code release_cached_blocks} unmaps something (Note [Releasing whole
   * segments]).
   */
  final TreeSet<Block> unmappable;

  BlockPool(boolean small, TieBreak tieBreak) {
    this.small = small;
    this.blocks = new TreeSet<>(tieBreak.sizeOrder());
    this.unmappable = new TreeSet<>(tieBreak.sizeOrder());
  }

  /** Inserts a free mapped block and stamps its age base (PyTorch's insert_into_blocks). */
  void insert(Block b) {
    b.gcCountBase = getFreeBlocksCallCount;
    blocks.add(b);
    if (b.expandable() && b.holdsWholePage()) {
      unmappable.add(b);
    }
  }

  /** Removes a free mapped block (its key fields are those it was inserted with). */
  void remove(Block b) {
    blocks.remove(b);
    if (b.expandable() && b.holdsWholePage()) {
      unmappable.remove(b);
    }
  }

  String name() {
    return small ? "small" : "large";
  }
}

package kvsim.alloc.caching;

/**
 * Memory obtained from the driver in one piece: a classic segment (one {@code cudaMalloc}, never
 * resized, returned whole) or an expandable segment (one virtual reservation whose pages are
 * mapped on demand, PyTorch's expandable segments of PR #96995). A segment and its blocks belong to
 * one pool and one stream for life, as in PyTorch's {@code CUDACachingAllocator.cpp}.
 */
final class Segment {
  final long address;
  final long size;
  final long stream;
  final BlockPool pool;
  final boolean expandable;
  /** Page size of an expandable segment (2 MiB small, large segment size large), 0 otherwise. */
  final long pageBytes;
  /** Creation order, the 2026 tie-break ({@link TieBreak#SEGMENT_AGE}). */
  final long serial;
  /** The lowest-address block. */
  Block head;
  /**
   * Whether the segment is held as one whole free block, so the retry ladder could return it to the
   * driver; kept by the allocator after every change of the segment's blocks.
   */
  boolean releasable;

  Segment(long address, long size, long stream, BlockPool pool, boolean expandable, long pageBytes, long serial) {
    this.address = address;
    this.size = size;
    this.stream = stream;
    this.pool = pool;
    this.expandable = expandable;
    this.pageBytes = pageBytes;
    this.serial = serial;
  }

  long end() {
    return address + size;
  }
}

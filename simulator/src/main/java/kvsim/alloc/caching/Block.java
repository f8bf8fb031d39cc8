package kvsim.alloc.caching;

/**
 * A contiguous piece of a segment (a block of PyTorch's {@code CUDACachingAllocator.cpp}):
 * allocated or free, mapped or (in an expandable segment) unmapped. The blocks of one segment form
 * a doubly linked list in address order that tiles the segment exactly. Key fields ({@link #size},
 * {@link #address}) are changed only while the block is outside every ordered set: a {@code
 * TreeSet} cannot find an entry whose key changed after it was inserted.
 */
final class Block {
  final Segment segment;
  long stream;
  long address;
  long size;
  long requestedSize;
  boolean allocated;
  boolean mapped = true;
  Block prev;
  Block next;
  /** The pool's search counter when the block was last inserted (for its age in collection). */
  long gcCountBase;
  /** The handle while allocated, -1 otherwise. */
  int handle = -1;

  Block(Segment segment, long address, long size) {
    this.segment = segment;
    this.stream = segment.stream;
    this.address = address;
    this.size = size;
  }

  /** A search key: the free-block order's lowest possible entry for (stream, size). */
  Block(long stream) {
    this.segment = null;
    this.stream = stream;
  }

  /** Returns whether the block does not cover its whole segment (PyTorch: has a prev or a next). */
  boolean isSplit() {
    return prev != null || next != null;
  }

  /** Returns whether the block lives in an expandable segment. */
  boolean expandable() {
    return segment.expandable;
  }

  /**
   * Returns whether the block, in an expandable segment, covers at least one whole page of it (the
   * pages PyTorch's {@code unmap_block} would unmap).
   */
  boolean holdsWholePage() {
    long page = segment.pageBytes;
    long firstPage = (address - segment.address + page - 1) / page;
    long endPage = (end() - segment.address) / page;
    return firstPage < endPage;
  }

  /** Returns the first address past the block. */
  long end() {
    return address + size;
  }

  /** Links this block between {@code before} and {@code after} (either may be null). */
  void splice(Block before, Block after) {
    prev = before;
    next = after;
    if (before != null) {
      before.next = this;
    } else {
      segment.head = this;
    }
    if (after != null) {
      after.prev = this;
    }
  }

  @Override
  public String toString() {
    return (allocated ? "allocated" : mapped ? "free" : "unmapped")
        + " [0x" + Long.toHexString(address) + ", +" + size + ")";
  }
}
